"""The metrics of DiaFORGE Appendix C.1, computed from transcripts.

The definitions, in the paper's notation, with the value-matching table and its examples, are in
docs/metrics.md ("The paper's metrics"); what the code here relies on:

* c(d) is the list of calls of the first assistant turn of kind ``tool_calls`` (`first_call`), or
  nothing. Malformed and truncated turns carry no calls, so a parse failure is never read as a call.
* FTR counts every wrong or superfluous call of that turn (the paper's prose, not its set-valued
  sum), so FTR(d) can exceed 1; TCP, TCR, PKP and PKR align a turn when the gold tool is among the
  called ones (the paper's formula, not its prose), and a zero denominator gives 0.0.
* `values_match` is symmetric and strict (no fuzzy string similarity); tests/eval/test_metrics.py
  pins its rules case by case.
* ConvRel is None when no turn has a grade: it is never estimated. TTR and NGD-n read reply turns
  only, with the tokeniser of `diaforge.text`.
* `compute_metrics` returns the keys of `METRIC_KEYS` (the order reports show) rounded to 6
  decimals, with `n` the number of dialogues; dialogues that ended in ``error`` are scored as they
  stand, since dropping them would flatter a model whose runs crash.
* DICE-Score (a dataset metric) lives in `diaforge.dice`, which `data_gen` may import, and is
  re-exported here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from diaforge.dice import (
    DiceItem,
    LLMItemCounter,
    count_items,
    dialogue_dice,
    dialogue_dice_counts,
    dice_items,
    dice_score,
)
from diaforge.eval.transcripts import MODES, Transcript
from diaforge.schema import ToolCall
from diaforge.text import ngd, tokenize, ttr

__all__ = [
    "GRADE_VALUE",
    "METRIC_KEYS",
    "REQUIRED_BUCKETS",
    "DiceItem",
    "DialogueScore",
    "LLMItemCounter",
    "compute_breakdowns",
    "compute_metrics",
    "conv_rel",
    "count_items",
    "dialogue_dice",
    "dialogue_dice_counts",
    "dice_items",
    "dice_score",
    "first_call",
    "metrics_by_mode",
    "ngd",
    "reply_texts",
    "required_bucket",
    "score_dialogue",
    "tokenize",
    "ttr",
    "values_match",
]

METRIC_KEYS = (
    "Acc",
    "FTR",
    "TAR",
    "TCP",
    "TCR",
    "PKP",
    "PKR",
    "ConvRel",
    "TTR",
    "NGD2",
    "NGD3",
    "NGD4",
    "malformed",
    "malformed_dialogues",
    "TAR_malformed",
    "truncated",
    "n",
)
"""The keys of `compute_metrics`, in the order reports show them."""

GRADE_VALUE = {1: 0.0, 2: 0.5, 3: 1.0}
"""g of Appendix C.1: rubric grade -> normalised similarity."""

REQUIRED_BUCKETS = ("0", "1", "2", "3+")

_ROUND = 6


# --------------------------------------------------------------------------------------------
# Value matching
# --------------------------------------------------------------------------------------------

_INT_STR = re.compile(r"[+-]?\d+")
_NUMBER_STR = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE_STR = re.compile(r"(\d{4})([-/])(\d{2})\2(\d{2})")
_DATETIME_HEAD = re.compile(r"(\d{4})([-/])(\d{2})\2(\d{2})[T ]")
_BOOL_STR = {"true": True, "false": False}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number_from_str(s: str) -> int | float | None:
    """A plain decimal numeral as a number; None for anything else ("12a", "1,000", "1_000", "nan")."""
    s = s.strip()
    if _INT_STR.fullmatch(s):
        return int(s)
    if _NUMBER_STR.fullmatch(s):
        return float(s)
    return None


def _normalise_text(s: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", s).casefold().split())


def _temporal(s: str) -> date | datetime | None:
    """A date ("2026-02-03", "2026/02/03") or an ISO datetime; None when `s` is neither."""
    s = s.strip()
    m = _DATE_STR.fullmatch(s)
    if m:
        try:
            return date(int(m.group(1)), int(m.group(3)), int(m.group(4)))
        except ValueError:
            return None
    m = _DATETIME_HEAD.match(s)
    if not m:
        return None
    iso = f"{m.group(1)}-{m.group(3)}-{m.group(4)}{s[10:]}"
    if iso[-1] in "Zz":
        iso = iso[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(iso)
    except ValueError:
        return None


def _is_aware(d: datetime) -> bool:
    return d.tzinfo is not None and d.utcoffset() is not None


def _temporal_equal(a: date | datetime, b: date | datetime) -> bool:
    if isinstance(a, datetime) and isinstance(b, datetime):
        if _is_aware(a) != _is_aware(b):
            a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
        return a == b
    if isinstance(a, datetime):
        a, b = b, a
    # a is a date now; b a date or a datetime.
    if isinstance(b, datetime):
        return b.time() == time(0) and b.date() == a
    return a == b


def _strings_match(pred: str, gold: str) -> bool:
    if _normalise_text(pred) == _normalise_text(gold):
        return True
    tp, tg = _temporal(pred), _temporal(gold)
    return tp is not None and tg is not None and _temporal_equal(tp, tg)


def values_match(pred: Any, gold: Any) -> bool:
    """Does a predicted argument value match the gold one? Rules: docs/metrics.md, "Value matching"."""
    if pred is None or gold is None:
        return pred is None and gold is None
    if isinstance(pred, bool) or isinstance(gold, bool):
        if isinstance(pred, bool) and isinstance(gold, bool):
            return pred == gold
        flag, other = (pred, gold) if isinstance(pred, bool) else (gold, pred)
        return isinstance(other, str) and _BOOL_STR.get(other.strip().casefold()) is flag
    if _is_number(pred) or _is_number(gold):
        if _is_number(pred) and _is_number(gold):
            return pred == gold
        num, other = (pred, gold) if _is_number(pred) else (gold, pred)
        if not isinstance(other, str):
            return False
        parsed = _number_from_str(other)
        return parsed is not None and parsed == num
    if isinstance(pred, str) and isinstance(gold, str):
        return _strings_match(pred, gold)
    if isinstance(pred, (list, tuple)) and isinstance(gold, (list, tuple)):
        return len(pred) == len(gold) and all(values_match(p, g) for p, g in zip(pred, gold, strict=True))
    if isinstance(pred, dict) and isinstance(gold, dict):
        return set(pred) == set(gold) and all(values_match(pred[k], gold[k]) for k in gold)
    return False


# --------------------------------------------------------------------------------------------
# Dialogue-level indicators
# --------------------------------------------------------------------------------------------


def first_call(transcript: Transcript) -> list[ToolCall] | None:
    """c(d): the calls of the first assistant turn of kind ``tool_calls``; None when there is none."""
    for turn in transcript.turns:
        if turn.role == "assistant" and turn.kind == "tool_calls" and turn.tool_calls:
            return list(turn.tool_calls)
    return None


@dataclass(frozen=True)
class DialogueScore:
    """The per-dialogue quantities behind the corpus metrics."""

    acc: int
    ftr: int
    tar: int
    aligned: bool
    """(c(d), g(d)) is in the alignment multiset M."""
    pred_names: frozenset[str]
    pred_keys: frozenset[str]
    gold_names: frozenset[str]
    gold_keys: frozenset[str]
    assistant_turns: int
    malformed_turns: int
    truncated: int = 0
    """1 when the dialogue's outcome was a truncated reply (no call, last assistant turn truncated)."""

    @property
    def tool_hits(self) -> int:
        """|tnames(c) ∩ tnames(g)| when aligned, else 0."""
        return len(self.pred_names & self.gold_names) if self.aligned else 0

    @property
    def key_hits(self) -> int:
        """|keys(c) ∩ keys(g)| when aligned, else 0."""
        return len(self.pred_keys & self.gold_keys) if self.aligned else 0


def score_dialogue(transcript: Transcript) -> DialogueScore:
    """Acc(d), FTR(d), TAR(d) and the sets the precision/recall metrics need."""
    calls = first_call(transcript)
    gold = transcript.seed_tool
    gold_names = frozenset() if gold is None else frozenset({gold})
    gold_keys = frozenset() if gold is None else frozenset(transcript.gold_args)
    assistant = transcript.assistant_turns()
    malformed = sum(1 for t in assistant if t.kind == "malformed")
    if not calls:
        return DialogueScore(
            acc=int(gold is None),
            ftr=0,
            tar=1,
            aligned=False,
            pred_names=frozenset(),
            pred_keys=frozenset(),
            gold_names=gold_names,
            gold_keys=gold_keys,
            assistant_turns=len(assistant),
            malformed_turns=malformed,
            truncated=int(bool(assistant) and assistant[-1].kind == "truncated"),
        )
    names = [c.name for c in calls]
    gold_called = gold is not None and gold in names
    acc = (
        gold is not None
        and len(calls) == 1
        and calls[0].name == gold
        and values_match(calls[0].args, transcript.gold_args)
    )
    return DialogueScore(
        acc=int(acc),
        ftr=len(calls) - int(gold_called),
        tar=0,
        aligned=gold_called,
        pred_names=frozenset(names),
        pred_keys=frozenset(k for c in calls for k in c.args),
        gold_names=gold_names,
        gold_keys=gold_keys,
        assistant_turns=len(assistant),
        malformed_turns=malformed,
    )


# --------------------------------------------------------------------------------------------
# Conversational metrics (the token and diversity definitions are `diaforge.text`'s)
# --------------------------------------------------------------------------------------------


def reply_texts(transcripts: Iterable[Transcript]) -> list[str]:
    """The public text of every assistant turn of kind ``reply`` (no thoughts, calls or malformed output)."""
    return [
        turn.content
        for t in transcripts
        for turn in t.turns
        if turn.role == "assistant" and turn.kind == "reply"
    ]


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def conv_rel(transcripts: Iterable[Transcript]) -> float | None:
    """Mean over graded dialogues of the mean of g(s_t) over their graded turns; None when no
    transcript carries grades (None or an empty list)."""
    per_dialogue = [sum(GRADE_VALUE[s] for s in t.convrel) / len(t.convrel) for t in transcripts if t.convrel]
    if not per_dialogue:
        return None
    return sum(per_dialogue) / len(per_dialogue)


# --------------------------------------------------------------------------------------------
# Corpus metrics
# --------------------------------------------------------------------------------------------


def _r(x: float) -> float:
    return round(float(x), _ROUND)


def compute_metrics(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    """Every metric of Appendix C.1 (plus the malformed and truncated shares) over `transcripts`.

    Returns the keys of `METRIC_KEYS`: floats rounded to 6 decimals, ``ConvRel`` None when not
    computed, ``n`` the number of dialogues. Mix modes only on purpose: `metrics_by_mode` splits
    them. An empty list gives zeros and ``n = 0``.
    """
    scores = [score_dialogue(t) for t in transcripts]
    n = len(scores)
    texts = reply_texts(transcripts)
    tool_hits = sum(s.tool_hits for s in scores)
    key_hits = sum(s.key_hits for s in scores)
    conv = conv_rel(transcripts)
    out: dict[str, Any] = {
        "Acc": _r(_ratio(sum(s.acc for s in scores), n)),
        "FTR": _r(_ratio(sum(s.ftr for s in scores), n)),
        "TAR": _r(_ratio(sum(s.tar for s in scores), n)),
        "TCP": _r(_ratio(tool_hits, sum(len(s.pred_names) for s in scores))),
        "TCR": _r(_ratio(tool_hits, sum(len(s.gold_names) for s in scores))),
        "PKP": _r(_ratio(key_hits, sum(len(s.pred_keys) for s in scores))),
        "PKR": _r(_ratio(key_hits, sum(len(s.gold_keys) for s in scores))),
        "ConvRel": None if conv is None else _r(conv),
        "TTR": _r(ttr(texts)),
        "NGD2": _r(ngd(texts, 2)),
        "NGD3": _r(ngd(texts, 3)),
        "NGD4": _r(ngd(texts, 4)),
        "malformed": _r(
            _ratio(sum(s.malformed_turns for s in scores), sum(s.assistant_turns for s in scores))
        ),
        "malformed_dialogues": _r(_ratio(sum(1 for s in scores if s.malformed_turns), n)),
        "TAR_malformed": _r(_ratio(sum(1 for s in scores if s.tar and s.malformed_turns), n)),
        "truncated": _r(_ratio(sum(s.truncated for s in scores), n)),
        "n": n,
    }
    return {k: out[k] for k in METRIC_KEYS}


def required_bucket(count: int) -> str:
    """The breakdown bucket of a required-argument count: "0", "1", "2" or "3+"."""
    return "3+" if count >= 3 else str(count)


def compute_breakdowns(
    transcripts: Sequence[Transcript],
    compute: Callable[[Sequence[Transcript]], dict[str, Any]] | None = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """`compute_metrics` (or `compute`, e.g. `diaforge.eval.anatomy.compute_anatomy`) per slice::

        {"by_near_duplicate": {"near_duplicate": {...}, "no_near_duplicate": {...}},
         "by_required_args": {"0": {...}, "1": {...}, "2": {...}, "3+": {...}}}

    Slices with no dialogue are left out (their zeros would read as results). Call it on one
    mode's transcripts at a time.
    """
    compute = compute or compute_metrics
    by_dup: dict[str, dict[str, Any]] = {}
    for key, flag in (("near_duplicate", True), ("no_near_duplicate", False)):
        group = [t for t in transcripts if t.has_near_duplicate is flag]
        if group:
            by_dup[key] = compute(group)
    by_req: dict[str, dict[str, Any]] = {}
    for bucket in REQUIRED_BUCKETS:
        group = [t for t in transcripts if required_bucket(t.required_params) == bucket]
        if group:
            by_req[bucket] = compute(group)
    return {"by_near_duplicate": by_dup, "by_required_args": by_req}


def split_by_mode(transcripts: Iterable[Transcript]) -> dict[str, list[Transcript]]:
    """Transcripts grouped by mode, static first; only modes present."""
    groups: dict[str, list[Transcript]] = {m: [] for m in MODES}
    for t in transcripts:
        groups[t.mode].append(t)
    return {m: ts for m, ts in groups.items() if ts}


def metrics_by_mode(transcripts: Iterable[Transcript]) -> dict[str, dict[str, Any]]:
    """``{"static": compute_metrics(...), "dynamic": compute_metrics(...)}`` for the modes present."""
    return {mode: compute_metrics(ts) for mode, ts in split_by_mode(transcripts).items()}
