"""How many of a benchmark's word 4-grams a training corpus already holds.

For each benchmark opening (first user turn) and each benchmark question (assistant reply in
the tool-selection phase), the word 4-grams it shares with the same kind of text in the training
corpus. Reported: the share of texts with at least one shared 4-gram and the mean share of
shared 4-grams per text. `python -m diaforge.data_gen ngram-overlap TRAIN.jsonl BENCH.jsonl`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from diaforge.schema import Dialogue

N = 4
_WORD = re.compile(r"[a-z0-9']+")


def ngrams(text: str, n: int = N) -> set[tuple[str, ...]]:
    ws = _WORD.findall(text.lower())
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}


def openings(dialogues: Iterable[Dialogue]) -> list[str]:
    return [d.turns[0].content for d in dialogues if d.turns and d.turns[0].role == "user"]


def questions(dialogues: Iterable[Dialogue]) -> list[str]:
    return [
        t.content
        for d in dialogues
        for t in d.turns
        if t.role == "assistant" and t.phase == "tool_selection" and t.content and not t.tool_calls
    ]


def _overlap(bench: Sequence[str], train: Sequence[str]) -> dict[str, float]:
    seen: set[tuple[str, ...]] = set()
    for t in train:
        seen |= ngrams(t)
    shares, any_shared = [], 0
    for t in bench:
        grams = ngrams(t)
        if not grams:
            continue
        shared = len(grams & seen)
        any_shared += shared > 0
        shares.append(shared / len(grams))
    n = len(shares)
    return {
        "texts": n,
        "share_with_any_shared_4gram": any_shared / n if n else 0.0,
        "mean_shared_4gram_share": sum(shares) / n if n else 0.0,
    }


def ngram_overlap(train: Sequence[Dialogue], bench: Sequence[Dialogue]) -> dict[str, Any]:
    """Word 4-gram overlap of the benchmark's openings and questions with the training corpus."""
    return {
        "openings": _overlap(openings(bench), openings(train)),
        "questions": _overlap(questions(bench), questions(train)),
    }
