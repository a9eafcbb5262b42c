"""Where the fluency judge meets the rendering path: the kinds of phrase it judges, the sentence
each kind is read in, the judge in use for a run, and the log of what it said in one dialogue.

The rule parse proposes, a language model disposes: `render` asks the judge in use (set with
`judging_with`, none by default: the rule path alone, as before) to pick among the renderings of a
phrase, and falls back to the plain wording when it flags every one. The model itself lives in
`diaforge.data_gen.fluency`; this module imports no model, so the rendering path stays light
when no judge is used.

A phrase is always read *in its sentence* (`FRAMES`): "look up the returns whether a unit is
vacant" is scored inside "Sure. To look up the returns whether a unit is vacant, I need a few
details.", against the same sentence with the fallback wording in its place.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

#: The kinds of phrase the judge reads, and the sentence each is said in (``{}`` is the phrase).
#: An action is a verb phrase after "to" (the teacher's "To {act}, I need ..."), an option a
#: verb phrase the question offers, an offer the verb phrase a refusal suggests instead: all
#: three are read in the action's sentence, so a phrase is scored once whatever its role. A
#: choice is the noun phrase a user picks, a parameter the noun an argument is asked by.
_VERB_PHRASE = "Sure. To {}, I need a few details."
FRAMES: dict[str, str] = {
    "action": _VERB_PHRASE,
    "option": _VERB_PHRASE,
    "offer": _VERB_PHRASE,
    "choice": "I'd like {}, please.",
    "param": "What is the {} you want to use?",
}
KINDS = tuple(FRAMES)


class Judge(Protocol):
    """What the rendering path asks of a fluency judge (`diaforge.data_gen.fluency.FluencyJudge`
    is the one the toolkit ships; a test can pass any object with these methods)."""

    def flags(self, kind: str, phrase: str, fallback: str) -> bool:
        """Whether `phrase` reads worse than `fallback` by more than the judge tolerates."""
        ...

    def rank(self, kind: str, candidates: Sequence[str], fallback: str) -> str:
        """The candidate the judge prefers among those it does not flag, else `fallback`."""
        ...


@dataclass
class PhraseLog:
    """What the judge said about the phrases of one dialogue: each `(kind, phrase)` it flagged
    (a rendering it dropped, or one that reached the text), and each it kept. The validator
    rejects a dialogue whose text holds a flagged phrase; `stats.json` counts flags by kind."""

    flagged: list[tuple[str, str]] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[list[str]]]:
        return {"flagged": [list(x) for x in self.flagged], "kept": [list(x) for x in self.kept]}


_JUDGE: contextvars.ContextVar[Judge | None] = contextvars.ContextVar("fluency_judge", default=None)
_LOG: contextvars.ContextVar[PhraseLog | None] = contextvars.ContextVar("fluency_log", default=None)


def active_judge() -> Judge | None:
    """The judge the rendering path asks, or None (rules only)."""
    return _JUDGE.get()


@contextlib.contextmanager
def judging_with(judge: Judge | None) -> Iterator[None]:
    """Render with `judge` inside the block (None: rules only). Asyncio tasks created inside the
    block inherit it."""
    token = _JUDGE.set(judge)
    try:
        yield
    finally:
        _JUDGE.reset(token)


@contextlib.contextmanager
def phrase_log() -> Iterator[PhraseLog]:
    """Collect what the judge says about the phrases rendered inside the block (one dialogue)."""
    log = PhraseLog()
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def judged(kind: str, candidates: Sequence[str], fallback: str, *, sure: bool = False) -> str:
    """The rendering to say: with no judge in use, or where the parse is `sure`, the first
    candidate (the rule path's pick) or `fallback` when there is none; with a judge, the
    candidate it prefers among those it does not flag, else `fallback`. Each candidate the judge
    flags is logged."""
    if kind not in FRAMES:
        raise ValueError(f"unknown phrase kind {kind!r}; expected one of {', '.join(KINDS)}")
    cands = list(dict.fromkeys(c for c in candidates if c))
    judge = _JUDGE.get()
    if judge is None or sure:
        return cands[0] if cands else fallback
    picked = judge.rank(kind, cands, fallback) if cands else fallback
    log = _LOG.get()
    if log is not None:
        log.flagged += [(kind, c) for c in cands if c != picked and judge.flags(kind, c, fallback)]
        log.kept.append((kind, picked))
    return picked


__all__ = ["FRAMES", "KINDS", "Judge", "PhraseLog", "active_judge", "judged", "judging_with", "phrase_log"]
