"""The metrics of DiaFORGE Appendix C.1, computed from transcripts.

Notation (Appendix C.1). For a dialogue d, the reference is g(d) = ({tau*}, {tau* -> V*}): the
gold tool `seed_tool` and its gold argument map `gold_args`. The first tool-bearing turn t† is
the first assistant turn of kind ``tool_calls``; c(d) is the list of calls of that turn, or
nothing (∅) when the dialogue has no such turn (`first_call`). Malformed turns carry no calls,
whatever their raw text holds: a parse failure is never read as a call.

Dialogue-level indicators, averaged over the dialogues (`compute_metrics`):

* ``Acc(d) = 1[c(d) = g(d)]``: the first tool-bearing turn holds exactly one call, to the gold
  tool (exact name), whose argument map has exactly the key set of `gold_args` and whose values
  all match under the value-matching rules below. With ``seed_tool = None`` (a case where no tool
  should be called) g(d) = (∅, ∅), so Acc(d) = 1 exactly when no call was made.
* ``FTR(d)``: the wrong or superfluous calls of the first tool-bearing turn, counted per call:
  ``sum over its calls of 1[name != tau*]`` plus every call to the gold tool beyond the first
  (equivalently ``len(calls) - 1[tau* called]``); 0 with no call. The paper's sum runs over the
  *set* tools(a_t†), but its prose ("every superfluous invocation is counted") and the issue ask
  for every wrong or superfluous call to count, so two calls to the gold tool give FTR(d) = 1 and
  two calls to the same distractor give 2. FTR(d) can exceed 1; the corpus FTR is its mean, as in
  the paper's tables.
* ``TAR(d) = 1[c(d) = ∅]``: the dialogue has no tool call at all (whatever `seed_tool` is).

Precision and recall over the alignment multiset
``M = {(c(d), g(d)) : c(d) != ∅ and tau*(d) ∈ tnames(c(d))}``::

    TCP = Σ_M |tnames(c) ∩ tnames(g)| / Σ_C |tnames(c)|     TCR = Σ_M |tnames(c) ∩ tnames(g)| / Σ_G |tnames(g)|
    PKP = Σ_M |keys(c) ∩ keys(g)|     / Σ_C |keys(c)|       PKR = Σ_M |keys(c) ∩ keys(g)|     / Σ_G |keys(g)|

* tnames(c) is the *set* of tool names of the calls of c; keys(c) is the set of argument keys of
  its calls (the union over its calls when there are several); keys(g) is the key set of
  `gold_args`. A dialogue with no call contributes 0 to the C sums; a dialogue with
  ``seed_tool = None`` contributes 0 to the G sums (tnames(g) = keys(g) = ∅).
* ⚠ The paper's prose says a prediction is aligned "iff both invoke the identical set of
  tool-identifiers", but its formula only asks that the gold tool be among the called ones. We
  follow the formula: a turn calling the gold tool and a distractor is aligned (so TCP is below 1
  for it: one correct name out of two), while Acc is 0 and FTR is 1.
* A zero denominator (no calls at all, or no gold keys at all) gives 0.0, so that a model that
  never calls scores 0 rather than an undefined value. All four lie in [0, 1].

Malformed output (not in the paper; BFCL issue #443 shows why parse failures must not pass for
"no call"): ``malformed`` is the share of assistant turns that were malformed,
``malformed_dialogues`` the share of dialogues with at least one malformed turn, and
``TAR_malformed`` the share of dialogues with no call *and* at least one malformed turn, the part
of TAR that garbage output explains rather than deliberate abstention.

Truncated output (not in the paper): an assistant turn of kind ``truncated`` was cut off by the
token budget before its end (`eval.models.Reply.kind`). It carries no calls, so like a malformed
turn it is never read as a call (Acc, FTR and the precision/recall metrics see no call), and it is
not malformed (``malformed`` does not count it). ``truncated`` is the share of dialogues whose
outcome was a truncated reply: no call, and the last assistant turn truncated (the runner ends a
dialogue at a truncated reply). Such a dialogue counts in TAR, whose definition is unchanged, so
``truncated`` is the part of TAR that the budget, not the model, explains.

Conversational metrics (only user-visible text, never private thoughts):

* ``ConvRel``: the rubric grades s in {1, 2, 3} stored in `Transcript.convrel` map to
  g(1) = 0, g(2) = 0.5, g(3) = 1; ConvRel(d) is their mean over the graded assistant turns of d,
  and the corpus ConvRel the mean over the dialogues that have grades. With no grades anywhere it
  is None ("not computed"): it is never faked. `eval.judge.ConvRelJudge` produces the grades with an LLM.
* ``TTR`` and ``NGD2/3/4``: over the public text of the assistant's *reply* turns only (turns of
  kind ``reply``, their `content`). Call turns (their JSON is not prose), malformed turns (their
  raw text is not a reply the user read as such) and thoughts are left out. Text is lower-cased
  and tokenised with ``re.findall(r"\\w+(?:'\\w+)?", text)`` (words, with one inner apostrophe
  kept: "don't"). TTR = |distinct tokens| / |tokens| over all replies together; NGD-n =
  |distinct n-grams| / |n-grams|, where n-grams are taken inside each reply and never span two
  replies. Both are 0.0 when there is nothing to count (`diaforge.text.tokenize`, `ttr`, `ngd`:
  the corpus statistics of `data_gen.corpus` use the same definitions).

Value matching (`values_match(pred, gold)`), used for Acc. It is symmetric and strict: there is
no fuzzy string similarity, which would credit wrong IDs that differ by one character.

============================  ==========================================  ===========================
pred / gold                   rule                                        examples
============================  ==========================================  ===========================
None / anything               only None matches None                      None ≠ "", None ≠ 0
bool / bool                   equal                                       True = True
bool / string                 string is "true"/"false", any case, strip   True = " TRUE "; True ≠ "yes"
bool / number                 never (JSON true is not 1)                  True ≠ 1
number / number              numerically equal (int and float alike)     3 = 3.0
number / string              string is a plain decimal numeral           437292 = "437292",
                              (optional sign, fraction, exponent),        12.5 = "12.50";
                              then numerically equal                      12 ≠ "12a", 1000 ≠ "1,000"
string / string              equal after Unicode NFKC, case folding,     "New  York " = "new york";
                              whitespace runs collapsed and stripped;     "ＡＢＣ" = "abc"
                              else equal as dates/datetimes (below);      "007" ≠ "7" (two strings
                              never compared as numbers                   are never numbers)
date / date                   same calendar date; "YYYY-MM-DD" or         "2026-02-03" = "2026/02/03"
                              "YYYY/MM/DD"                                "2026-02-03" ≠ "2026-02-04"
date / datetime               the datetime is at midnight (00:00:00.0)    "2026-02-03" =
                              of the same calendar date (its own zone)    "2026-02-03T00:00:00";
                                                                          ≠ "2026-02-03T09:30"
datetime / datetime           ISO 8601 via `datetime.fromisoformat` (a    "2026-02-03T10:00" =
                              trailing Z is UTC); both aware: the same    "2026-02-03 10:00:00";
                              instant; naive vs aware: the wall clocks    "T10:00+01:00" = "T09:00Z"
                              are compared, the offset ignored
list / list                   same length, elementwise in order           [1, "a"] = ["1", "A"]
dict / dict                   identical key sets, values recursively      {"a": 1} ≠ {"a": 1, "b": 2}
anything else                 no match                                    "1" ≠ [1]
============================  ==========================================  ===========================

A date or datetime string must start with a four-digit year, then month and day separated by
the same "-" or "/"; a datetime continues with "T" or a space and a time.

Dataset metric (DICE-Bench, Eq. 1), for a corpus rather than a model: ``dice_score(counts,
num_items, alpha=e²)`` = min(|S≠0|, T) · sqrt(|S|·T) / Σ_i ln(1 + α·S_i), with S_i the number of
function-related items mentioned in user utterance i and T the number of items (the function name
plus each argument); 0.0 where undefined (T = 0, no utterance, or all S_i = 0). Items are counted
by a deterministic value matcher (`count_items`, same normalisation as `values_match`) or an LLM
(`LLMItemCounter`). They live in `diaforge.dice` (which `python -m data_gen analyze-corpus`
uses, and `data_gen` may not import `eval`) and are re-exported here; the rules are in that
module's docstring.

Every metric in the `compute_metrics` dict is rounded to 6 decimals; `n` is the number of
dialogues. Dialogues that ended in ``error`` are scored as they stand (usually as abstentions):
dropping them would flatter a model whose runs crash.
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
from diaforge.schema import ToolCall
from diaforge.text import ngd, tokenize, ttr
from eval.transcripts import MODES, Transcript

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
    """Does a predicted argument value match the gold one? Rules in the module docstring."""
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
    """`compute_metrics` (or `compute`, e.g. `eval.anatomy.compute_anatomy`) per slice::

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
