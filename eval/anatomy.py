"""The anatomy of a dialogue: the sub-skills behind Acc, computed from transcripts.

Acc (Appendix C.1, `diaforge.eval.metrics`) is one bit per dialogue; it hides which skill moved. The
anatomy splits the way to a correct call into the steps a dialogue needs, each a share with its
numerator and denominator, so that "the right tool in 9 of 25 calls" can be read off a report.

Notation as in `diaforge.eval.metrics`: τ* is the gold tool (`seed_tool`), V* its gold argument map
(`gold_args`), t† the first assistant turn of kind ``tool_calls`` and c(d) its list of calls (∅
when there is none; malformed and truncated turns never carry calls). U(d) is everything the user
said before t†: the content of the user turns that precede it, joined by newlines. A dialogue
with no call has no U(d) and no values.

Per dialogue d:

* ``asks_first(d) = 1`` iff the first assistant turn is a reply (kind ``reply``, not a call, a
  malformed or a truncated turn) whose text holds a question mark: the rule the scripted teacher
  and the critique judge use to tell a question from a statement (``"?" in content``).
* ``right_tool(d) = 1`` iff c(d) ≠ ∅, τ* is not None and every call of c(d) names τ*
  (tnames(c(d)) = {τ*}). A case with no gold tool that calls anything calls the wrong tool.
* ``right_keys(d) = 1`` iff right_tool(d) and the first call of c(d) has exactly the key set of V*.
* ``right_values(d) = 1`` iff right_keys(d) and the first call's values all match V* under
  `diaforge.eval.metrics.values_match`. Acc(d) = right_values(d) when c(d) holds a single call.
* The values of d are the (key, value) pairs of every call of c(d), whatever the tool;
  ``grounded(d)`` counts those that are grounded in U(d) (below), ``invented(d) = 1`` iff at
  least one value of d is not grounded.

Over a set of dialogues D (one mode, or one breakdown slice of a mode), with C = {d : c(d) ≠ ∅}::

    asks_first      = Σ_D asks_first(d)                 / |D|               (asks_first_n / n)
    right_tool      = Σ_C right_tool(d)                 / |C|               (right_tool_n / calls_n)
    right_keys      = Σ_C right_keys(d)                 / Σ_C right_tool(d) (right_keys_n / right_tool_n)
    right_values    = Σ_C right_values(d)               / Σ_C right_keys(d) (right_values_n / right_keys_n)
    values_grounded = Σ_C grounded(d)                   / Σ_C |values(d)|   (values_grounded_n / values_n)
    values_invented = Σ_C invented(d)                   / |C|               (values_invented_n / calls_n)

Each share is rounded to 6 decimals and is None ("not computed") when its denominator is 0: a
model that never calls has no right tool to score, and that is not a zero. The counts are ints.

A value v of key k is grounded in U(d) (`value_grounded`) when:

==============  ================================================================================
value           grounded when
==============  ================================================================================
None            never (the user never says null)
bool            one clause of U(d) (split at ``. , ; ! ?``, newlines and the word "and") holds
                every word of the key except a leading "is"/"has" (light stemming) and a word
                that says the value: "yes" or "true" for True, "no" or "false" for False, as
                the user-proxy says flags ("the government official is yes")
list / tuple    it is not empty and every element is grounded (under the same key)
dict            it is not empty and every value is grounded (under its own key)
number          a numeral written in U(d) is numerically equal (optional sign, digits with
                optional comma grouping and fraction, not part of a word, a date, a clock time
                or a range: 12.5 is grounded by "12.50", 1000 by "1,000", 85.1 by the JSON
                ``"percent":85.1``; 3 is not by "2026-03-09", 10 not by "10:30"), or,
                for a whole number below a million, one of its English cardinals occurs as
                words (`diaforge.dice.number_words`: "three", "twenty-five")
string          it occurs in U(d) between word boundaries after the normalisation of
                `values_match` (NFKC, case folding, whitespace collapsed; surrounding quotes
                stripped), as DICE-Score's value matcher reads it (`diaforge.dice`, which also
                reads a whole-number string "4" in "four" and a cardinal "four" in "4"); or it
                is a date or datetime and a date or datetime written in U(d) is the same under
                the date rules of `values_match` ("2026/03/09" is grounded by "2026-03-09")
==============  ================================================================================

`compute_anatomy` gives the dict for one set of dialogues (`ANATOMY_KEYS`), `anatomy_by_mode`
one per mode and `anatomy_breakdowns` one per breakdown slice (`diaforge.eval.metrics.compute_breakdowns`).
`diaforge.eval.report.summarise` stores them in ``metrics.json`` as ``anatomy`` and ``anatomy_breakdowns``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from diaforge.dice import DiceItem, item_mentioned, number_words
from diaforge.eval.metrics import (
    _is_number,
    _normalise_text,
    _temporal,
    _temporal_equal,
    compute_breakdowns,
    first_call,
    split_by_mode,
    values_match,
)
from diaforge.eval.transcripts import Transcript
from diaforge.text import stem, words

__all__ = [
    "ANATOMY_KEYS",
    "ANATOMY_SHARES",
    "DialogueAnatomy",
    "anatomy_breakdowns",
    "anatomy_by_mode",
    "asks",
    "compute_anatomy",
    "dialogue_anatomy",
    "said_before_call",
    "value_grounded",
]

ANATOMY_SHARES = (
    ("asks_first", "asks_first_n", "n"),
    ("right_tool", "right_tool_n", "calls_n"),
    ("right_keys", "right_keys_n", "right_tool_n"),
    ("right_values", "right_values_n", "right_keys_n"),
    ("values_grounded", "values_grounded_n", "values_n"),
    ("values_invented", "values_invented_n", "calls_n"),
)
"""(share, numerator, denominator) keys of every share, in the order reports show them."""

ANATOMY_KEYS = (
    "n",
    "calls_n",
    "values_n",
    *(key for share, num, _ in ANATOMY_SHARES for key in (share, num)),
)
"""The keys of `compute_anatomy`."""

_ROUND = 6


# --------------------------------------------------------------------------------------------
# Grounding a value in the user's words
# --------------------------------------------------------------------------------------------

_CLAUSE_SPLIT = re.compile(r"[.,;!?\n]|\band\b", re.IGNORECASE)
_FLAG_WORDS = {True: frozenset({"yes", "true"}), False: frozenset({"no", "false"})}
_NUMERAL = re.compile(r"(?<![\w.,/-])[+-]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w/-]|[.,]\d)")
_CLOCK = re.compile(r"(?<!\w)\d{1,2}:\d{2}(?::\d{2})?(?!\w)")
_TEMPORAL = re.compile(
    r"(?<![\w-])\d{4}([-/])\d{2}\1\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?)?(?![\w-])"
)


def asks(text: str) -> bool:
    """Whether a reply asks something: it holds a question mark (the teacher's and the critique
    judge's rule)."""
    return "?" in text


def _flag_said(key: str, value: bool, said: str) -> bool:
    flag = words(key)
    if len(flag) > 1 and flag[0] in ("is", "has"):
        flag = flag[1:]
    needed = {stem(w) for w in flag}
    if not needed:
        return False
    for clause in _CLAUSE_SPLIT.split(said):
        found = words(clause)
        if needed <= {stem(w) for w in found} and _FLAG_WORDS[value] & set(found):
            return True
    return False


def _numerals(said: str) -> list[float]:
    """The numerals of `said`, dates, datetimes and clock times blanked out first."""
    text = _CLOCK.sub(" ", _TEMPORAL.sub(" ", said))
    return [float(m.group(0).replace(",", "")) for m in _NUMERAL.finditer(text)]


def _cardinal_said(value: float, said: str) -> bool:
    if not (math.isfinite(value) and float(value).is_integer()):
        return False
    text = _normalise_text(said)
    return any(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text) for w in number_words(int(value)))


def _temporals(said: str) -> list[Any]:
    found = (_temporal(m.group(0)) for m in _TEMPORAL.finditer(said))
    return [t for t in found if t is not None]


def value_grounded(key: str, value: Any, said: str) -> bool:
    """Whether argument `key` = `value` is grounded in `said` (the user's words); rules in the
    module docstring."""
    if value is None:
        return False
    if isinstance(value, bool):
        return _flag_said(key, value, said)
    if isinstance(value, (list, tuple)):
        return bool(value) and all(value_grounded(key, v, said) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(value_grounded(str(k), v, said) for k, v in value.items())
    if _is_number(value):
        return any(n == value for n in _numerals(said)) or _cardinal_said(value, said)
    if item_mentioned(said, DiceItem("", key, value)):
        return True
    if isinstance(value, str):
        wanted = _temporal(value)
        return wanted is not None and any(_temporal_equal(wanted, t) for t in _temporals(said))
    return False


def said_before_call(transcript: Transcript) -> str | None:
    """U(d): the user turns before the first tool-bearing turn, joined by newlines; None when the
    dialogue has no call."""
    said = []
    for turn in transcript.turns:
        if turn.role == "user":
            said.append(turn.content)
        elif turn.kind == "tool_calls" and turn.tool_calls:
            return "\n".join(said)
    return None


# --------------------------------------------------------------------------------------------
# Per dialogue and per set of dialogues
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DialogueAnatomy:
    """The per-dialogue indicators of the module docstring."""

    asks_first: bool
    called: bool
    """c(d) ≠ ∅."""
    right_tool: bool
    right_keys: bool
    right_values: bool
    values: int
    """How many argument values c(d) holds (over all its calls)."""
    grounded: int
    """How many of them are grounded in U(d)."""

    @property
    def invented(self) -> bool:
        return self.grounded < self.values


def _first_asks(transcript: Transcript) -> bool:
    first = next((t for t in transcript.turns if t.role == "assistant"), None)
    return first is not None and first.kind == "reply" and asks(first.content)


def dialogue_anatomy(transcript: Transcript) -> DialogueAnatomy:
    """The indicators of one dialogue."""
    first_asks = _first_asks(transcript)
    calls = first_call(transcript)
    if not calls:
        return DialogueAnatomy(first_asks, False, False, False, False, 0, 0)
    gold = transcript.seed_tool
    said = said_before_call(transcript) or ""
    tool = gold is not None and all(c.name == gold for c in calls)
    keys = tool and set(calls[0].args) == set(transcript.gold_args)
    right_values = keys and values_match(calls[0].args, transcript.gold_args)
    pairs = [(k, v) for c in calls for k, v in c.args.items()]
    grounded = sum(1 for k, v in pairs if value_grounded(k, v, said))
    return DialogueAnatomy(first_asks, True, tool, keys, right_values, len(pairs), grounded)


def _share(num: int, den: int) -> float | None:
    return round(num / den, _ROUND) if den else None


def compute_anatomy(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    """The anatomy of a set of dialogues: the keys of `ANATOMY_KEYS` (shares rounded to 6
    decimals, None over a zero denominator; counts as ints). Call it on one mode at a time."""
    parts = [dialogue_anatomy(t) for t in transcripts]
    called = [a for a in parts if a.called]
    counts = {
        "n": len(parts),
        "calls_n": len(called),
        "values_n": sum(a.values for a in called),
        "asks_first_n": sum(1 for a in parts if a.asks_first),
        "right_tool_n": sum(1 for a in called if a.right_tool),
        "right_keys_n": sum(1 for a in called if a.right_keys),
        "right_values_n": sum(1 for a in called if a.right_values),
        "values_grounded_n": sum(a.grounded for a in called),
        "values_invented_n": sum(1 for a in called if a.invented),
    }
    out: dict[str, Any] = dict(counts)
    for share, num, den in ANATOMY_SHARES:
        out[share] = _share(counts[num], counts[den])
    return {k: out[k] for k in ANATOMY_KEYS}


def anatomy_by_mode(transcripts: Sequence[Transcript]) -> dict[str, dict[str, Any]]:
    """``{"static": compute_anatomy(...), "dynamic": ...}`` for the modes present."""
    return {mode: compute_anatomy(ts) for mode, ts in split_by_mode(transcripts).items()}


def anatomy_breakdowns(transcripts: Sequence[Transcript]) -> dict[str, dict[str, dict[str, Any]]]:
    """`compute_anatomy` per breakdown slice (the slices of `diaforge.eval.metrics.compute_breakdowns`);
    call it on one mode's transcripts at a time."""
    return compute_breakdowns(transcripts, compute=compute_anatomy)
