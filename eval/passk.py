"""pass^k: whether a model gets a dialogue right every time it is asked, in other words (τ-bench).

``eval run --repeats k`` plays every dialogue of the dynamic mode k times (`diaforge.eval.runner`): trial
r draws the user-proxy's turns from a seed of its own (r = 0 is the run without repeats), and
nothing else changes (the model's decoding stays as configured: greedy stays greedy). One Acc on
one wording hides how much of a score is luck of the wording; pass^k shows it.

Notation. D is the set of dialogues of one mode on the positive split that have trials; dialogue
i has n_i trials (its transcripts, one per repeat), of which c_i succeed. A trial succeeds when
Acc(d) = 1 (`diaforge.eval.metrics`: the first tool-bearing turn is exactly one call to the gold tool
with exactly the gold arguments). Following τ-bench (Yao et al. 2024, "τ-bench: A Benchmark for
Tool-Agent-User Interaction in Real-World Domains"), for 1 ≤ k ≤ min_i n_i::

    pass^k = (1 / |D|) · Σ_i C(c_i, k) / C(n_i, k)

with C(a, b) the binomial coefficient (0 when b > a): the chance that k trials of a dialogue,
drawn without replacement from its n_i, all succeed, averaged over the dialogues (an unbiased
estimate of the chance that k fresh trials all succeed). pass^1 = (1/|D|) Σ_i c_i/n_i is the
mean success rate over every trial; pass^k never rises with k. Worked case: 3 trials, 2
successes: pass^1 = 2/3, pass^2 = C(2,2)/C(3,2) = 1/3, pass^3 = 0.

Per dialogue, its outcome is *stable* when its trials agree (c_i = n_i: always right; c_i = 0:
never right) and *wording-sensitive* when they do not (0 < c_i < n_i): the same dialogue, played
by the same model, is right in one wording and wrong in another.

`compute_pass_k` gives, for one mode's transcripts of every repeat (`PASS_K_KEYS`):

* ``n``: |D|, the dialogues; ``trials``: min_i n_i, the trials of each (the runner gives every
  dialogue the same count, k of ``--repeats``);
* ``pass^1`` ... ``pass^<trials>``: the formula above, rounded to 6 decimals;
* ``always_n``, ``never_n``, ``wording_sensitive_n``: the dialogues always right, never right and
  wording-sensitive (the three add up to n); ``wording_sensitive`` = wording_sensitive_n / n;
* ``by_successes``: how many dialogues had c successes, for c = 0 ... max n_i (``{"0": 22, ...}``),
  from which every pass^k can be recomputed;
* ``intervals``: the 95 % interval of each pass^k (``{"mean", "n", "lo", "hi"}``: the percentile
  bootstrap over dialogues of the per-dialogue values C(c_i, k) / C(n_i, k), `diaforge.eval.stats.
  mean_interval`; pass^k is a mean over dialogues, so the dialogue is what is resampled) and the
  Wilson interval of ``wording_sensitive`` (``{"k", "n", "lo", "hi"}``, `diaforge.eval.stats.share_interval`).

`summarise_pass_k` (``metrics.json`` -> ``pass_k``, by `diaforge.eval.report.summarise`) runs it on each
mode whose transcripts hold a repeat > 0: only ``dynamic``, as static mode replays the
reference's user turns and has nothing to redraw. The no-tool split is played once. Every other
metric of a run (Acc, the anatomy, the breakdowns, the no-tool split's) is computed on repeat 0
alone (`diaforge.eval.transcripts.first_trials`), so it keeps its meaning and stays comparable with runs
made without repeats; pass^1 over k trials is an estimate of the same rate from k times the data,
and differs from repeat 0's Acc by the luck of the wording. `passk_section` renders the block of
``report.md`` and `passk_lines` the console lines of ``eval run``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from math import comb
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.metrics import score_dialogue, split_by_mode
from diaforge.eval.stats import mean_interval, share_interval
from diaforge.eval.transcripts import Transcript

__all__ = [
    "PASS_K_KEYS",
    "compute_pass_k",
    "pass_hat_k",
    "pass_k_values",
    "passk_lines",
    "passk_section",
    "summarise_pass_k",
    "trial_outcomes",
]

PASS_K_KEYS = (
    "n",
    "trials",
    "always_n",
    "never_n",
    "wording_sensitive_n",
    "wording_sensitive",
    "by_successes",
    "intervals",
)
"""The keys of `compute_pass_k` besides ``pass^1`` ... ``pass^<trials>``."""

_ROUND = 6
_MODE_TITLE = {"static": "Static", "dynamic": "Dynamic"}


def pass_hat_k(successes: int, trials: int, k: int) -> Fraction:
    """C(successes, k) / C(trials, k) for one dialogue, exactly; 1 <= k <= trials."""
    if not 0 <= successes <= trials or not 1 <= k <= trials:
        raise ValueError(
            f"need 0 <= successes <= trials and 1 <= k <= trials, got c={successes} n={trials} k={k}"
        )
    return Fraction(comb(successes, k), comb(trials, k))


def pass_k_values(outcomes: Sequence[tuple[int, int]], k: int) -> Fraction:
    """pass^k over dialogues given as (successes, trials) pairs, exactly (0 for no dialogue)."""
    if not outcomes:
        return Fraction(0)
    return sum((pass_hat_k(c, n, k) for c, n in outcomes), Fraction(0)) / len(outcomes)


def trial_outcomes(transcripts: Iterable[Transcript]) -> dict[str, list[bool]]:
    """Per dialogue id, whether each of its trials succeeded (Acc(d) = 1), in repeat order. Call
    it on one mode and one split; two transcripts of the same dialogue and repeat are an
    `InputError`, as they would count one trial twice."""
    seen: dict[str, dict[int, bool]] = defaultdict(dict)
    for t in transcripts:
        if t.repeat in seen[t.id]:
            raise InputError(f"two transcripts of dialogue {t.id!r} in {t.mode} mode, repeat {t.repeat}")
        seen[t.id][t.repeat] = bool(score_dialogue(t).acc)
    return {did: [ok for _, ok in sorted(trials.items())] for did, trials in seen.items()}


def compute_pass_k(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    """pass^1 ... pass^<trials> and the stable / wording-sensitive counts of one mode's transcripts
    of every repeat (module docstring). An empty list gives n = 0 and no pass^k."""
    outcomes = [(sum(oks), len(oks)) for oks in trial_outcomes(transcripts).values()]
    n = len(outcomes)
    trials = min((t for _, t in outcomes), default=0)
    sensitive = sum(1 for c, t in outcomes if 0 < c < t)
    histogram = {str(c): 0 for c in range(max((t for _, t in outcomes), default=0) + 1)}
    for c, _ in outcomes:
        histogram[str(c)] += 1
    out: dict[str, Any] = {"n": n, "trials": trials}
    for k in range(1, trials + 1):
        out[f"pass^{k}"] = round(float(pass_k_values(outcomes, k)), _ROUND)
    out.update(
        always_n=sum(1 for c, t in outcomes if c == t),
        never_n=sum(1 for c, _ in outcomes if c == 0),
        wording_sensitive_n=sensitive,
        wording_sensitive=round(sensitive / n, _ROUND) if n else None,
        by_successes=histogram,
    )
    intervals: dict[str, Any] = {
        f"pass^{k}": mean_interval([float(pass_hat_k(c, t, k)) for c, t in outcomes])
        for k in range(1, trials + 1)
    }
    intervals["wording_sensitive"] = share_interval(sensitive, n)
    out["intervals"] = intervals
    return out


def summarise_pass_k(positive: Iterable[Transcript]) -> dict[str, Any]:
    """``metrics.json`` -> ``pass_k``: `compute_pass_k` per mode whose transcripts (positive
    split, every repeat) hold a repeat > 0; ``{}`` when none does (a run without repeats)."""
    groups = split_by_mode(positive)
    return {mode: compute_pass_k(ts) for mode, ts in groups.items() if any(t.repeat > 0 for t in ts)}


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------


def _ks(block: Mapping[str, Any]) -> list[int]:
    return list(range(1, int(block.get("trials") or 0) + 1))


def _with_interval(block: Mapping[str, Any], key: str, digits: int) -> str:
    """``0.36 [0.28, 0.45]``: a value of the block and its 95 % interval, when stored."""
    iv = (block.get("intervals") or {}).get(key) or {}
    text = f"{block[key]:.{digits}f}"
    if iv.get("lo") is None or iv.get("hi") is None:
        return text
    return f"{text} [{iv['lo']:.{digits}f}, {iv['hi']:.{digits}f}]"


def _outcome_line(block: Mapping[str, Any]) -> str:
    n = block.get("n", 0)
    share = block.get("wording_sensitive")
    iv = (block.get("intervals") or {}).get("wording_sensitive") or {}
    bounds = f" [{100 * iv['lo']:.1f}, {100 * iv['hi']:.1f}]" if iv.get("lo") is not None else ""
    shown = f" ({100 * share:.1f}%{bounds})" if share is not None else ""
    return (
        f"always right {block.get('always_n', 0)}, never right {block.get('never_n', 0)}, "
        f"wording-sensitive (right in some trials, wrong in others) {block.get('wording_sensitive_n', 0)} "
        f"of {n}{shown}"
    )


def passk_section(metrics: Mapping[str, Any]) -> list[str]:
    """The pass^k block of ``report.md`` from a ``metrics.json`` dict: a title, what was repeated
    and how pass^k is read, one table row per repeated mode, and its dialogues' outcomes; nothing
    when the run had no repeats."""
    blocks = metrics.get("pass_k") or {}
    if not blocks:
        return []
    ks = max((_ks(b) for b in blocks.values()), key=len)
    header = "| Mode | dialogues | trials | " + " | ".join(f"pass^{k} (↑)" for k in ks) + " |"
    rows = [header, "|" + "|".join(" --- " for _ in range(3 + len(ks))) + "|"]
    for mode, b in blocks.items():
        cells = [_with_interval(b, f"pass^{k}", 2) if f"pass^{k}" in b else "–" for k in ks]
        rows.append(
            f"| {_MODE_TITLE.get(mode, mode)} | {b.get('n', 0)} | {b.get('trials', 0)} | "
            + " | ".join(cells)
            + " |"
        )
    outcomes = [f"- {_MODE_TITLE.get(mode, mode)}: {_outcome_line(b)}." for mode, b in blocks.items()]
    return [
        "## pass^k: the same dialogues in other words",
        "Each dialogue was played several times (trials), the user-proxy's wording drawn from another seed in "
        "each (the model's decoding unchanged). pass^k (τ-bench) is the chance that k trials of a "
        "dialogue all succeed (Acc = 1): C(c, k) / C(n, k) for c successes in n trials, averaged over "
        "the dialogues; pass^1 is the success rate over every trial. Every other number in this report "
        "is from the first trial (repeat 0) alone. In brackets: 95 % intervals (a bootstrap over the "
        "dialogues for pass^k, Wilson for the wording-sensitive share). Definitions: docs/metrics.md "
        '("pass^k") and `eval/passk.py`.',
        "\n".join(rows),
        "\n".join(outcomes),
    ]


def passk_lines(metrics: Mapping[str, Any], mode: str) -> list[str]:
    """The console line of ``eval run`` for one mode's pass^k (none without repeats)."""
    b = (metrics.get("pass_k") or {}).get(mode)
    if not b:
        return []
    values = "  ".join(f"pass^{k} {_with_interval(b, f'pass^{k}', 3)}" for k in _ks(b))
    return [
        f"{'':8s} {values}  ({b['n']} dialogues x {b['trials']} trials)  wording-sensitive "
        f"{b['wording_sensitive_n']}/{b['n']}"
    ]
