"""Copy rules for the `lookup` thoughts under greedy decoding (`eval run --copy-thoughts on`).

A model trained on the teacher's `lookup` thoughts (data_gen/agents/lookup.py) writes three spans
of each thought as copies of the tool listing, and a small one miscopies them:

* the name after an option's description, in ``What each does: DESC (NAME); ...`` and in
  ``The user chose DESC (NAME).``: the name of another candidate follows the user's own option,
  and the call goes to that tool;
* ``The tool is NAME(SIG). Required: K, ...``: a signature or a required list with a key
  dropped, after which the call comes before every required value is known.

`ThoughtCopy` holds those spans to the listing and leaves every other character of the reply to
the model. The name after a description may be only a listed tool whose description and name share
the most distinctive words with the description written (`name_matches`: word overlap weighted by
how few of the listed tools hold the word; ties stay the model's choice). After ``The tool is ``
comes a listed tool's signature and its required keys, exactly as the listing has them, and the
tool is the one the same thought chose where it chose one. Once the thought closes, `ThoughtRule`
notes the tool the thought settled on, and the call rule (`diaforge.llm.call_rule.CallRule`)
holds the call's tool to it.

The matcher reads only what the model sees (the listing) and what it wrote (the description):
it uses no gold label. On the teacher's own thoughts of a 440-seed corpus it names the tool the
teacher wrote in 1,311 of 1,346 description-name pairs, and keeps it among tied names in 28 more.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from diaforge.format.lookup_thought import CHOSE, TOOL_IS, WHAT_EACH_DOES, lookup_tail
from diaforge.format.rendering import THINK_CLOSE, THINK_OPEN
from diaforge.llm.rules import BaseRule, Choice, Mask, Row, RuleContext
from diaforge.schema import Tool

_WORD = re.compile(r"[a-z0-9]+")
_OPTION = re.compile(r"(?:^|; )([^;()\n]+?) \(([^()\n]*)(\)?)")
"""An option of a selection list: its description, the name being written, and its closing ``)``."""
_CHOSEN = re.compile(re.escape(CHOSE) + r"([^;()\n]+?) \(([^()\n]*)(\)?)")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class Listed:
    """One tool as the listing shows it: what a lookup thought copies of it."""

    name: str
    words: frozenset[str]
    """The words of its description and of its name (split at ``_``), lower case."""
    lookup: str
    """``SIG. Required: K, ....``, the rest of a thought's ``The tool is`` span."""

    @classmethod
    def of(cls, tool: Tool) -> Listed:
        words = _words(tool.description) | set(tool.name.lower().split("_"))
        return cls(tool.name, frozenset(words), lookup_tail(tool))


def name_matches(description: str, listed: Sequence[Listed]) -> list[str]:
    """The listed tools whose words best cover `description`: each word shared counts
    log((n + 1) / m), where m of the n listed tools hold it, so a word every tool holds counts
    little; all tools when no word is shared."""
    said = _words(description)
    holders = {w: sum(w in t.words for t in listed) for w in said}
    n = len(listed)
    scores = {t.name: sum(math.log((n + 1) / holders[w]) for w in said if w in t.words) for t in listed}
    top = max(scores.values(), default=0.0)
    return [t.name for t in listed if scores[t.name] == top]


class ThoughtCopy:
    """Holds the copy spans of a `lookup` thought to the listing (module docstring)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.listed = [Listed.of(t) for t in tools]
        self.by_name = {t.name: t for t in self.listed}

    def chosen(self, thought: str) -> str | None:
        """The listed tool this thought says the user chose (its closed ``DESC (NAME)``), or None."""
        m = _CHOSEN.search(thought)
        return m.group(2) if m and m.group(3) and m.group(2) in self.by_name else None

    def broken(self, thought: str, since: int = 0, skip: frozenset[int] = frozenset()) -> int | None:
        """Where the first copy span of `thought` that cannot be (or become) what the listing says
        begins, among the spans that reach past character `since` and do not begin at a `skip`
        position; None when every such span can."""
        for at, ok in self._spans(thought):
            if at not in skip and not ok(since):
                return at
        return None

    def _spans(self, thought: str) -> list[tuple[int, Any]]:
        """Each copy span of `thought`: where it begins and a check of it given `since`."""
        spans: list[tuple[int, Any]] = []
        for m in _CHOSEN.finditer(thought):
            spans.append((m.start(), lambda since, m=m: m.end() <= since or self._name_ok(m)))
        at = thought.find(WHAT_EACH_DOES)
        if at >= 0:
            start = at + len(WHAT_EACH_DOES)
            end = thought.find(". I ask", start)
            options = thought[start : len(thought) if end < 0 else end]
            for m in _OPTION.finditer(options):
                end_at = start + m.end()
                spans.append((start + m.start(), lambda since, m=m, e=end_at: e <= since or self._name_ok(m)))
        at = thought.rfind(TOOL_IS)  # the latest only: it runs to the end of the thought
        if at >= 0:
            written = thought[at + len(TOOL_IS) :]
            spans.append((at, lambda since, b=thought[:at], w=written: self._lookup_ok(b, w)))
        return spans

    def _name_ok(self, m: re.Match[str]) -> bool:
        allowed = name_matches(m.group(1), self.listed)
        name, closed = m.group(2), bool(m.group(3))
        return name in allowed if closed else any(a.startswith(name) for a in allowed)

    def _lookup_ok(self, before: str, written: str) -> bool:
        chosen = self.chosen(before)
        tools = [self.by_name[chosen]] if chosen else self.listed
        return any(t.lookup.startswith(written) or written.startswith(t.lookup) for t in tools)


def thought_of(reply: str) -> str | None:
    """The open thought of a reply (after ``<think>``, before ``</think>``), or None when the reply
    has no thought or it has closed."""
    body = reply.lstrip()
    if not body.startswith(THINK_OPEN) or THINK_CLOSE in body:
        return None
    return body[len(THINK_OPEN) :]


class ThoughtRule(BaseRule):
    """`ThoughtCopy` as a decoding rule (`diaforge.llm.rules`): inside an open thought its mask
    allows the tokens that keep every copy span a copy of the listing (among the best tokens
    only: where none does, the span is left to the model from then on); once the thought closes
    it leaves the tool its ``The tool is NAME`` settled on in ``row.notes["tool"]``, which the call
    rule (`diaforge.llm.call_rule.CallRule`) holds the call to.

    Counters: ``thought_copies`` (tokens inside thoughts where the model's own choice would have
    broken a copy span) and ``copy_fallbacks`` (tokens where no token among the best kept it)."""

    name = "thought"

    def __init__(self, copy: ThoughtCopy) -> None:
        super().__init__()
        self.copy = copy
        self.counters = {"thought_copies": 0, "copy_fallbacks": 0}
        self._settled = False
        self._thought = ""
        self._abandoned: frozenset[int] = frozenset()

    @classmethod
    def build(cls, context: RuleContext) -> ThoughtRule | None:
        return cls(ThoughtCopy(context.candidates)) if context.candidates else None

    def mask(self, row: Row) -> Mask | None:
        thought = thought_of(row.text)
        if thought is None:
            self._settle(row)
            return None
        self._thought = thought
        texts, eos = row.vocab.texts, row.vocab.eos

        def allows(token: int) -> bool:
            piece = texts[token]
            if token in eos or not piece:
                return False
            cut = piece.find(THINK_CLOSE)
            candidate = thought + (piece if cut < 0 else piece[:cut])
            return self.copy.broken(candidate, since=len(thought), skip=self._abandoned) is None

        return Mask(allows, deep=False)

    def chosen(self, row: Row, choice: Choice) -> None:
        if not choice.fallback:
            self.count("thought_copies", int(choice.rank > 0))
            return
        # No token among the best keeps the span a copy: it is left to the model from here on.
        self.count("copy_fallbacks")
        thought = self._thought
        at = self.copy.broken(
            thought + row.vocab.texts[choice.token], since=len(thought), skip=self._abandoned
        )
        if at is not None:
            self._abandoned = self._abandoned | {at}

    def _settle(self, row: Row) -> None:
        """Once the thought has closed, note the tool of its ``The tool is`` for the call rule."""
        body = row.text.lstrip()
        close = body.find(THINK_CLOSE)
        if self._settled or not body.startswith(THINK_OPEN) or close < 0:
            return
        self._settled = True
        thought = body[len(THINK_OPEN) : close]
        at = thought.rfind(TOOL_IS)
        if at < 0:
            return
        name = re.match(r"[\w.-]+", thought[at + len(TOOL_IS) :])
        if name and name.group(0) in self.copy.by_name:
            row.notes["tool"] = name.group(0)
