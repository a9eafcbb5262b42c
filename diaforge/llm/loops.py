"""Stopping a reply that has fallen into a loop.

A small model decoding greedily often ends a turn by repeating one block of text (a sentence, a
paragraph, a list item) until the token budget cuts it off; SmolLM2-135M-Instruct does so on
almost every turn of an unfamiliar format. Everything after the loop began is waste: the reply is
already cut off in substance, and generating the rest of the budget costs most of an evaluation.

`LoopStop` watches a reply's token ids and says when its tail is one block of at least
`min_period` tokens repeated back to back `min_repeats` times, covering at least `min_span`
tokens. The reply is then ended with ``finish_reason="loop"``, which evaluation counts as
truncated (cut off before its end of turn), exactly as the budget would have: under greedy
decoding a loop this long almost never breaks (measured in docs/results.md, the evaluation loop's row),
and when it does the reply still ends on the budget, with no end-of-turn token, so it is
truncated either way unless it finishes a call list after the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from diaforge.llm.rules import BaseRule, Row, RuleContext

LOOP_FINISH = "loop"
"""`ChatResult.finish_reason` of a reply ended by `LoopStop`."""


@dataclass(frozen=True)
class LoopStop:
    """When a reply counts as looping (module docstring). Defaults: a block of 4 to 256 tokens,
    3 times in a row, over at least 48 tokens; checked every `every` new tokens."""

    min_period: int = 4
    max_period: int = 256
    min_repeats: int = 3
    min_span: int = 48
    every: int = 4
    """Check once per this many new tokens (the check scans every period; it is cheap but not free)."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_period <= self.max_period:
            raise ValueError(f"need 1 <= min_period <= max_period, got {self.min_period}, {self.max_period}")
        if self.min_repeats < 2 or self.min_span < 1 or self.every < 1:
            raise ValueError("need min_repeats >= 2, min_span >= 1 and every >= 1")

    def period(self, ids: Sequence[int]) -> int:
        """The shortest period of the looping tail of `ids`, or 0 when the tail does not loop."""
        ids = list(ids)
        n = len(ids)
        for p in range(self.min_period, self.max_period + 1):
            need = max(self.min_repeats * p, self.min_span)
            if need > n:
                break
            # The last `need` tokens have period p when each equals the one p before it; the last
            # token alone rules out most periods without copying a slice.
            if ids[n - 1] == ids[n - 1 - p] and ids[n - need + p :] == ids[n - need : n - p]:
                return p
        return 0

    def __call__(self, ids: Sequence[int]) -> bool:
        """Whether the reply whose new tokens are `ids` has fallen into a loop (checked only at
        multiples of `every` tokens)."""
        return len(ids) % self.every == 0 and self.period(ids) > 0


class LoopRule(BaseRule):
    """`LoopStop` as a decoding rule (`diaforge.llm.rules`): it masks nothing and ends a row whose
    tail loops with finish reason ``"loop"`` (``DecodingConfig.loop_stop``)."""

    name = "loop_stop"

    def __init__(self, stop: LoopStop | None = None) -> None:
        super().__init__()
        self.stop = stop if stop is not None else LoopStop()

    @classmethod
    def build(cls, context: RuleContext) -> LoopRule:
        return cls()

    def advance(self, row: Row, token: int) -> str | None:
        return LOOP_FINISH if self.stop(row.ids) else None
