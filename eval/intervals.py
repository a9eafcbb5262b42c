"""The intervals of a run's rates, and runs compared dialogue by dialogue (`diaforge.eval.stats` applied).

``metrics.json`` -> ``intervals`` (`interval_summary`, stored by `diaforge.eval.report.summarise` beside
the point values, which stay as they were)::

    {"static":  {"Acc": {"k": 13, "n": 40, "lo": 0.2008, "hi": 0.4798}, "TAR": {...},
                 "FTR": {"mean": 0.45, "n": 40, "lo": ..., "hi": ...}, "TCP": {...}, ...},
     "dynamic": {...},
     "breakdowns": {"static": {"by_near_duplicate": {"near_duplicate": {...}, ...},
                               "by_required_args": {...}}, ...},
     "anatomy":  {"static": {"asks_first": {"k": 3, "n": 40, "lo": ..., "hi": ...}, ...}, ...},
     "no_tool":  {"static": {"refusal_acc": {...}, "wrong_call": {...},
                             "tool_hallucination_rate": {...}, "undecided": {...},
                             "false_refusal": {...}}, ...}}          # when the no-tool split ran

A share entry is ``{"k", "n", "lo", "hi"}`` (Wilson 95 %, `diaforge.eval.stats.share_interval`; lo and hi
null when n = 0), a mean entry ``{"mean", "n", "lo", "hi"}`` (percentile bootstrap, 2000
resamples, seed 0, `diaforge.eval.stats.mean_interval`). What each metric's k and n are (notation of
`diaforge.eval.metrics`; D the dialogues of the mode):

============================  =========================================================  ======
metric                        k / n                                                      kind
============================  =========================================================  ======
Acc, TAR, truncated           dialogues with the indicator / |D|                         share
malformed_dialogues           dialogues with a malformed turn / |D|                      share
TAR_malformed                 dialogues with no call and a malformed turn / |D|          share
FTR                           mean of FTR(d) over D (it can exceed 1)                    mean
ConvRel                       mean of ConvRel(d) over the graded dialogues               mean
TCP, TCR, PKP, PKR            the numerator and denominator sums of their C.1 formulas   share
malformed                     malformed assistant turns / assistant turns                share
============================  =========================================================  ======

The last two rows count names, keys or turns, several per dialogue, which are not independent:
their Wilson interval treats them as if they were, so it is narrower than the truth where a
dialogue contributes several (TCR, with one gold tool per dialogue, is a share of dialogues).
TTR and NGD2-4 are ratios over the tokens of all replies together, not shares of independent
units: they carry no interval. The anatomy's shares (`diaforge.eval.anatomy.ANATOMY_SHARES`) and the no-tool
split's (`diaforge.eval.no_tool.NO_TOOL_SHARES`) get the Wilson interval of their stored numerator and
denominator (``values_grounded`` counts values, several per dialogue, like TCP).

Paired comparisons (`paired_by_mode`; their verdict, shown, borderline or not shown, is
`diaforge.eval.stats.verdict`): the outcome of a dialogue is its Acc(d)
(`diaforge.eval.metrics.score_dialogue`) on the positive split, keyed by (dialogue id, mode)
(`dialogue_outcomes`); a dialogue played more than once under one key counts with its first play.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from diaforge.eval.anatomy import ANATOMY_SHARES
from diaforge.eval.metrics import GRADE_VALUE, compute_breakdowns, score_dialogue, split_by_mode
from diaforge.eval.no_tool import NO_TOOL_SHARES
from diaforge.eval.stats import PairedDifference, mean_interval, paired_difference, share_interval
from diaforge.eval.transcripts import MODES, Transcript

__all__ = [
    "dialogue_outcomes",
    "interval_summary",
    "metric_intervals",
    "paired_by_mode",
    "share_intervals",
]


def metric_intervals(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    """The intervals of the C.1 metrics of one set of dialogues (one mode or one slice of it)."""
    scores = [score_dialogue(t) for t in transcripts]
    n = len(scores)
    tool_hits = sum(s.tool_hits for s in scores)
    key_hits = sum(s.key_hits for s in scores)
    graded = [sum(GRADE_VALUE[s] for s in t.convrel) / len(t.convrel) for t in transcripts if t.convrel]
    return {
        "Acc": share_interval(sum(s.acc for s in scores), n),
        "FTR": mean_interval([s.ftr for s in scores]),
        "TAR": share_interval(sum(s.tar for s in scores), n),
        "TCP": share_interval(tool_hits, sum(len(s.pred_names) for s in scores)),
        "TCR": share_interval(tool_hits, sum(len(s.gold_names) for s in scores)),
        "PKP": share_interval(key_hits, sum(len(s.pred_keys) for s in scores)),
        "PKR": share_interval(key_hits, sum(len(s.gold_keys) for s in scores)),
        "ConvRel": mean_interval(graded) if graded else None,
        "malformed": share_interval(
            sum(s.malformed_turns for s in scores), sum(s.assistant_turns for s in scores)
        ),
        "malformed_dialogues": share_interval(sum(1 for s in scores if s.malformed_turns), n),
        "TAR_malformed": share_interval(sum(1 for s in scores if s.tar and s.malformed_turns), n),
        "truncated": share_interval(sum(s.truncated for s in scores), n),
    }


def share_intervals(counts: Mapping[str, Any], shares: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """``{share: Wilson entry}`` from a dict holding each share's numerator and denominator
    counts, as (share, numerator key, denominator key) triples name them."""
    return {share: share_interval(int(counts[num]), int(counts[den])) for share, num, den in shares}


def _no_tool_intervals(split: Mapping[str, Any]) -> dict[str, Any]:
    out = share_intervals(split, NO_TOOL_SHARES)
    out["undecided"] = share_interval(split["n"] - split["refusals_n"] - split["calls_n"], split["n"])
    return out


def interval_summary(summary: Mapping[str, Any], positive: Sequence[Transcript]) -> dict[str, Any]:
    """``metrics.json`` -> ``intervals`` (module docstring): `summary` is what
    `diaforge.eval.report.summarise` computed (its ``anatomy`` and ``no_tool`` counts are read from it),
    `positive` the positive split's transcripts."""
    groups = split_by_mode(positive)
    out: dict[str, Any] = {mode: metric_intervals(ts) for mode, ts in groups.items()}
    out["breakdowns"] = {
        mode: compute_breakdowns(ts, compute=metric_intervals) for mode, ts in groups.items()
    }
    out["anatomy"] = {
        mode: share_intervals(counts, ANATOMY_SHARES)
        for mode, counts in (summary.get("anatomy") or {}).items()
    }
    split = summary.get("no_tool")
    if isinstance(split, Mapping):  # a mode without its counts (an older metrics.json) is left out
        needed = {"n", "refusals_n", "calls_n", "false_refusals_n", "positive_n"}
        out["no_tool"] = {
            mode: _no_tool_intervals(split[mode])
            for mode in MODES
            if isinstance(split.get(mode), Mapping) and needed <= set(split[mode])
        }
    return out


def dialogue_outcomes(transcripts: Iterable[Transcript]) -> dict[tuple[str, str], int]:
    """Acc(d) of every positive-split dialogue, keyed by (id, mode); the first play of a key counts."""
    out: dict[tuple[str, str], int] = {}
    for t in transcripts:
        if t.split == "positive" and (t.id, t.mode) not in out:
            out[(t.id, t.mode)] = score_dialogue(t).acc
    return out


def paired_by_mode(
    a: Mapping[tuple[str, str], int], b: Mapping[tuple[str, str], int]
) -> dict[str, PairedDifference]:
    """Run A against run B (`diaforge.eval.stats.paired_difference`) per mode, from `dialogue_outcomes`;
    a mode with no dialogue in common is left out."""
    out: dict[str, PairedDifference] = {}
    for mode in MODES:
        mine = {key: v for key, v in a.items() if key[1] == mode}
        theirs = {key: v for key, v in b.items() if key[1] == mode}
        if not mine and not theirs:
            continue
        diff = paired_difference(mine, theirs)
        if diff is not None:
            out[mode] = diff
    return out
