"""Provisional: the incremental call parse re-reads the whole call (replaced by the resumable one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from diaforge.llm.constrain import CallGrammar


@dataclass(frozen=True)
class CallParse:
    grammar: CallGrammar
    text: str
    state: str

    def feed(self, text: str) -> CallParse | None:
        whole = self.text + text
        state = self.grammar.state(whole)
        return None if state == "invalid" else CallParse(self.grammar, whole, state)

    @property
    def complete(self) -> bool:
        return self.state == "complete"


def begin(grammar: CallGrammar) -> CallParse:
    return CallParse(grammar, "", "open")
