"""Prompt-lookup drafts and how many of them a pass verifies (`DecodingConfig.speculate`).

`PromptLookup` proposes, for one row, the tokens that followed the latest earlier occurrence of its
last few tokens in its own context. `DraftWidth` decides how many drafted tokens the next pass
feeds: every row of a batch is fed the same number of columns (its own token, then its draft, then
padding), so a pass costs about ``overhead + rows * width`` token-equivalents of work whether the
drafts are long or short, accepted or not. Drafting pays only when the tokens a pass is expected
to produce grow faster than that cost. On a GPU the fixed cost of a pass (reading the weights)
dwarfs a few more columns; on a CPU the columns weigh about as much as the fixed part at 16 rows,
and feeding eight drafted tokens to rows that accept one of them makes decoding slower than not
drafting at all.

The width is chosen per pass from the rows' own record: each row keeps a decayed count of the
drafted tokens it accepted and of those it was offered up to its first refusal, so its chance of
accepting the next drafted token is an estimate ``p`` from its recent spans (a lookup thought copying
the listing accepts nearly all; free text accepts few). A row offered ``m`` drafted tokens is
expected to produce ``1 + p + p^2 + ... + p^m`` tokens (the last is the model's own, after the
drafts it kept). The pass feeds the width with the most expected tokens per unit of cost, one (no
draft) when none beats it. The choice depends on the tokens only, never on timings, so a run
repeats exactly; and under greedy decoding it changes no reply, only how many passes write it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["PASS_OVERHEAD", "DraftWidth", "PromptLookup"]

#: The fixed cost of one decoding pass, in the cost of one more token column, by device type: what
#: a pass costs beyond the tokens it feeds (the weights read once, the kernels launched). On this
#: project's 2-core CPU, SmolLM2-135M over 16 rows of about 900 cached tokens measured 39, 61 and
#: 59 columns in three runs (``pass_cost`` in bench/speculation.py, `make bench` part
#: `eval_speculation`): a pass of 9 columns cost 2.8 to 3.6 times a pass of one. Replayed over the
#: demo model's evaluation (``replay`` there), settings from 32 to 48 cost within 2 % of each
#: other by a fit of the passes' timings, and wider ones more. The GPU figures are not measured: a GPU's
#: small-batch passes are bound by reading the weights, and a few more columns cost next to nothing.
PASS_OVERHEAD = {"cpu": 48.0, "cuda": 512.0, "mps": 128.0}
DEFAULT_OVERHEAD = 64.0
"""The overhead of a device `PASS_OVERHEAD` does not name."""


class PromptLookup:
    """Drafts for prompt-lookup decoding: the tokens that followed the latest earlier occurrence of
    the row's last `max_ngram` (down to `min_ngram`) tokens in its own context (the prompt, with
    the listing and the user's words, and the reply so far). A tuned model copies much of its reply
    (tool descriptions, names, signatures, the user's values), so such a draft is often what it
    would write; verifying it costs one pass for many tokens. The n-grams are indexed as the
    context grows, so a draft costs a few dictionary lookups.

    The longest match wins because it is the most specific: a listing repeats its short phrases
    ("Required:", "the user") in every entry, and only a longer tail tells which entry is being
    copied. Replayed over the demo model's evaluation of 80 held-out dialogues (`replay` in
    bench/speculation.py), tails of 1 to 8 tokens took 1,621 passes and 69,484 columns where 2 to
    3 took 1,854 and 71,335 (3,588 and 45,896 without drafts), and the run itself gave the same 80
    transcripts in 0.905 of the wall time; but its process peaked at 10.2 GB against 6.5 GB, likely
    (read from the code, not measured) because every rejected draft leaves hidden columns in every
    row of the batch's buffers. The defaults stay at 2 to 3 until those columns are reclaimed
    (bench/README.md)."""

    def __init__(self, context: Sequence[int], *, max_ngram: int = 3, min_ngram: int = 2) -> None:
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.context: list[int] = []
        self._index: list[dict[tuple[int, ...], int]] = [{} for _ in range(max_ngram)]
        for t in context:
            self.add(t)

    def add(self, token: int) -> None:
        """Append a token; the n-grams that end just before it become findable."""
        self.context.append(int(token))
        end = len(self.context) - 2  # index n-grams ending before the newest token only
        if end < 0:
            return
        for n in range(1, self.max_ngram + 1):
            if end - n + 1 >= 0:
                self._index[n - 1][tuple(self.context[end - n + 1 : end + 1])] = end - n + 1

    def draft(self, k: int) -> list[int]:
        """Up to `k` tokens that followed the longest indexed match of the context's tail."""
        ctx = self.context
        for n in range(self.max_ngram, self.min_ngram - 1, -1):
            if len(ctx) <= n:
                continue
            at = self._index[n - 1].get(tuple(ctx[-n:]))
            if at is not None:
                return ctx[at + n : at + n + k]
        return []


@dataclass
class _Record:
    """One row's decayed counts of drafted tokens accepted and offered (up to its first refusal)."""

    accepted: float = 0.0
    offered: float = 0.0

    @property
    def p(self) -> float:
        """The chance the row accepts its next drafted token (a uniform prior's posterior mean)."""
        return (self.accepted + 1.0) / (self.offered + 2.0)


@dataclass
class DraftWidth:
    """How many columns each speculative pass feeds (module docstring).

    `overhead`: the fixed cost of a pass in token columns (`PASS_OVERHEAD`); `decay`: how much of a
    row's record each new pass keeps (its recent spans count most)."""

    overhead: float
    decay: float = 0.8
    _records: dict[int, _Record] = field(default_factory=dict)

    @classmethod
    def for_device(cls, device_type: str) -> DraftWidth:
        return cls(PASS_OVERHEAD.get(device_type, DEFAULT_OVERHEAD))

    def _record(self, row: int) -> _Record:
        return self._records.setdefault(row, _Record())

    def forget(self, row: int) -> None:
        """Row `row` has ended: its record goes."""
        self._records.pop(row, None)

    def expected(self, row: int, offered: int) -> float:
        """Tokens row `row` is expected to produce from a pass that offers it `offered` drafts."""
        p = self._record(row).p
        return sum(p**j for j in range(offered + 1))

    def width(self, rows: Sequence[int], drafts: Sequence[Sequence[int]]) -> int:
        """The columns of the next pass (1: no draft): the most expected tokens per unit of cost.
        When no draft is fed, the rows that had one forget a little of their record (`decay`), so
        that a row which refused drafts in one span is tried again in a later one."""
        longest = max((len(d) for d in drafts), default=0)
        best, best_rate = 1, len(rows) / (self.overhead + len(rows))
        for width in range(2, longest + 2):
            gain = sum(self.expected(r, min(len(d), width - 1)) for r, d in zip(rows, drafts, strict=True))
            rate = gain / (self.overhead + len(rows) * width)
            if rate > best_rate:
                best, best_rate = width, rate
        if best == 1:
            for row, draft in zip(rows, drafts, strict=True):
                if draft:
                    record = self._record(row)
                    record.accepted, record.offered = (
                        self.decay * record.accepted,
                        self.decay * record.offered,
                    )
        return best

    def verified(self, row: int, offered: int, accepted: int) -> None:
        """Row `row` was offered `offered` drafted tokens and kept the first `accepted` of them."""
        record = self._record(row)
        tried = accepted + (1 if accepted < offered else 0)
        record.accepted = self.decay * record.accepted + accepted
        record.offered = self.decay * record.offered + tried
