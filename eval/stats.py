"""How sure a reported number is: intervals for rates and means, and paired comparisons of two runs.

An evaluation scores a sample of dialogues (the demo: 40); every rate it prints is an estimate,
and at n = 40 an accuracy near 0.3 is known to about ±0.14. This module holds the statistics
(pure functions, no evaluation types); `diaforge.eval.intervals` applies them to runs. Every interval is
two-sided at the 95 % level, z = 1.959964 (the 0.975 quantile of the standard normal).

**A share** k/n of independent units (dialogues): the Wilson score interval (`wilson`), with
p̂ = k/n::

    centre = (p̂ + z²/(2n)) / (1 + z²/n)
    half   = z / (1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/(4n²))
    [lo, hi] = [centre − half, centre + half]

It stays inside [0, 1], does not collapse to a point at k = 0 or k = n (0 of 20 gives
[0, 0.161]) and keeps close to its nominal coverage at small n, where the Wald interval
p̂ ± z·sqrt(p̂(1 − p̂)/n) does not (Newcombe 1998, Stat Med 17:857; Brown, Cai & DasGupta 2001,
Stat Sci 16:101). n = 0 has no interval (None).

**A mean** of per-dialogue values that is not a share (FTR counts the wrong calls of a dialogue
and can exceed 1; ConvRel averages grades): the percentile bootstrap (`bootstrap_mean`). B = 2000
resamples of the n values, drawn with replacement by ``random.Random(0)`` (so a report is the
same every time it is recomputed); with the B resample means sorted m[0] <= ... <= m[B−1] and
j = floor(B · 0.025) = 50, the interval is [m[j], m[B − 1 − j]] (50 means lie below it and 50
above). Constant values give a zero-width interval; n = 0 gives None.

**Two runs on the same dialogues** (`paired_difference`): each dialogue scored 0/1 in run A and
in run B, joined by a key (`diaforge.eval.intervals` uses (dialogue id, mode)); a dialogue in one run only
is counted (``unpaired_a``, ``unpaired_b``) and left out; no dialogue in common gives None. Over
the n common dialogues, with a = #(A 1, B 1), b = #(A 1, B 0) (``wins``), c = #(A 0, B 1)
(``losses``), d = #(A 0, B 0)::

    Δ = p_A − p_B = (b − c) / n                    p_A = (a + b)/n,  p_B = (a + c)/n

* the 95 % interval of Δ is Newcombe's square-and-add interval for paired proportions (Newcombe
  1998, Stat Med 17:2635, method 10), from the Wilson intervals [l_A, u_A] of p_A and [l_B, u_B]
  of p_B and a correlation estimate φ::

      lo = Δ − sqrt((p_A − l_A)² − 2φ(p_A − l_A)(u_B − p_B) + (u_B − p_B)²)
      hi = Δ + sqrt((u_A − p_A)² − 2φ(u_A − p_A)(p_B − l_B) + (p_B − l_B)²)
      φ  = C / sqrt((a + b)(c + d)(a + c)(b + d)),  C = ad − bc − n/2 if ad − bc > n/2,
           0 if 0 <= ad − bc <= n/2, ad − bc if ad − bc < 0;  φ = 0 if a margin is 0

  It needs no resampling and depends only on the four counts;
* the exact McNemar test (`mcnemar_exact`): under "no difference" each of the b + c discordant
  dialogues is equally likely to favour A or B, so the two-sided p-value is
  ``min(1, 2 · Σ_{i <= min(b, c)} C(b + c, i) / 2^(b + c))`` (1 when b + c = 0);
* the verdict (`verdict`, the one rule every report's words come from; docs/metrics.md, "The
  verdict rule"): a difference is **shown** when the interval excludes 0 (lo > 0 or hi < 0)
  *and* p < `ALPHA` = 0.05; **borderline** when exactly one of the two says so; **not shown**
  when neither. The two can disagree at the edge (the interval is a score approximation, the
  test exact): on the table a, b, c, d = 59, 6, 16, 80 the interval is [−0.119, −0.005] and
  p = 0.052, a borderline difference. `verdict_sentence` writes the verdict with both figures.

Numbers that these functions put in a dict (`share_interval`, `mean_interval`,
`PairedDifference.as_dict`) are rounded to 6 decimals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALPHA",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "BORDERLINE",
    "LEVEL",
    "NOT_SHOWN",
    "SHOWN",
    "VERDICTS",
    "Z95",
    "PairedDifference",
    "bootstrap_mean",
    "mcnemar_exact",
    "mean_interval",
    "newcombe_paired",
    "paired_difference",
    "share_interval",
    "verdict",
    "verdict_sentence",
    "wilson",
]

LEVEL = 0.95
"""The level of every interval."""
Z95 = 1.959963984540054
"""z of a two-sided 95 % interval: the 0.975 quantile of the standard normal."""
BOOTSTRAP_RESAMPLES = 2000
"""B of `bootstrap_mean`."""
BOOTSTRAP_SEED = 0
"""Seed of `bootstrap_mean`'s draws."""
ALPHA = 0.05
"""The level of the exact McNemar test in the verdict rule: p must be below it (two-sided)."""
SHOWN = "shown"
"""`verdict`: the interval excludes 0 and p < `ALPHA`."""
BORDERLINE = "borderline"
"""`verdict`: exactly one of the interval and the exact test says the difference is not 0."""
NOT_SHOWN = "not shown"
"""`verdict`: neither says so."""
VERDICTS = (SHOWN, BORDERLINE, NOT_SHOWN)

_ROUND = 6


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), _ROUND)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval (lo, hi) of the share k/n (module docstring); None when n = 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"wilson needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    return _wilson_bounds(k, n, z)


def _wilson_bounds(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def share_interval(k: int, n: int) -> dict[str, Any]:
    """``{"k", "n", "lo", "hi"}``: the Wilson interval of k/n (lo and hi None when n = 0)."""
    bounds = wilson(k, n)
    lo, hi = bounds if bounds is not None else (None, None)
    return {"k": int(k), "n": int(n), "lo": _r(lo), "hi": _r(hi)}


def bootstrap_mean(
    values: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = LEVEL,
) -> tuple[float, float] | None:
    """The percentile bootstrap interval (lo, hi) of the mean of `values` (module docstring);
    None for no values."""
    n = len(values)
    if n == 0:
        return None
    if resamples < 1:
        raise ValueError(f"bootstrap_mean needs at least one resample, got {resamples}")
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    j = math.floor(resamples * (1 - level) / 2)
    return means[j], means[resamples - 1 - j]


def mean_interval(values: Sequence[float]) -> dict[str, Any]:
    """``{"mean", "n", "lo", "hi"}``: the mean of `values` and its bootstrap interval (mean, lo
    and hi None for no values)."""
    n = len(values)
    bounds = bootstrap_mean(values)
    lo, hi = bounds if bounds is not None else (None, None)
    return {"mean": _r(sum(values) / n) if n else None, "n": n, "lo": _r(lo), "hi": _r(hi)}


def mcnemar_exact(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value of b and c discordant pairs (module docstring)."""
    if b < 0 or c < 0:
        raise ValueError(f"mcnemar_exact needs counts >= 0, got b={b}, c={c}")
    m = b + c
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**m)


def newcombe_paired(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float] | None:
    """Newcombe's interval (lo, hi) for p_A − p_B of a paired 2x2 table (module docstring):
    a both right, b only A right, c only B right, d both wrong; None when the table is empty."""
    if min(a, b, c, d) < 0:
        raise ValueError(f"newcombe_paired needs counts >= 0, got {a}, {b}, {c}, {d}")
    if a + b + c + d == 0:
        return None
    return _newcombe(a, b, c, d, z)


def _newcombe(a: int, b: int, c: int, d: int, z: float) -> tuple[float, float]:
    n = a + b + c + d
    p_a, p_b = (a + b) / n, (a + c) / n
    l_a, u_a = _wilson_bounds(a + b, n, z)
    l_b, u_b = _wilson_bounds(a + c, n, z)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > n / 2 else cross) / math.sqrt(margins)
    diff = p_a - p_b
    below = (p_a - l_a) ** 2 - 2 * phi * (p_a - l_a) * (u_b - p_b) + (u_b - p_b) ** 2
    above = (u_a - p_a) ** 2 - 2 * phi * (u_a - p_a) * (p_b - l_b) + (p_b - l_b) ** 2
    return max(-1.0, diff - math.sqrt(max(0.0, below))), min(1.0, diff + math.sqrt(max(0.0, above)))


@dataclass(frozen=True)
class PairedDifference:
    """Run A against run B on their common dialogues (module docstring)."""

    n: int
    """Dialogues scored in both runs."""
    rate_a: float
    """A's rate over those dialogues (p_A)."""
    rate_b: float
    """B's rate over those dialogues (p_B)."""
    both: int
    """a: right in both runs."""
    wins: int
    """b: right in A, wrong in B."""
    losses: int
    """c: wrong in A, right in B."""
    neither: int
    """d: wrong in both runs."""
    lo: float
    """Lower end of the 95 % interval of ``diff`` (Newcombe)."""
    hi: float
    """Upper end."""
    p_value: float
    """Exact two-sided McNemar p-value on ``wins`` and ``losses``."""
    unpaired_a: int = 0
    """Dialogues of A that B lacks (left out)."""
    unpaired_b: int = 0
    """Dialogues of B that A lacks (left out)."""

    @property
    def diff(self) -> float:
        """Δ = p_A − p_B."""
        return (self.wins - self.losses) / self.n

    @property
    def excludes_zero(self) -> bool:
        """The interval excludes 0 (one half of `verdict`)."""
        return self.lo > 0 or self.hi < 0

    @property
    def verdict(self) -> str:
        """`verdict` of this difference: shown, borderline or not shown."""
        return verdict(self)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "rate_a": _r(self.rate_a),
            "rate_b": _r(self.rate_b),
            "diff": _r(self.diff),
            "lo": _r(self.lo),
            "hi": _r(self.hi),
            "both": self.both,
            "wins": self.wins,
            "losses": self.losses,
            "neither": self.neither,
            "p_value": _r(self.p_value),
            "excludes_zero": self.excludes_zero,
            "verdict": self.verdict,
            "unpaired_a": self.unpaired_a,
            "unpaired_b": self.unpaired_b,
        }


def paired_difference(a: Mapping[Hashable, int], b: Mapping[Hashable, int]) -> PairedDifference | None:
    """Run A against run B from their per-dialogue outcomes (0 or 1, keyed alike): the counts of
    the paired table, Newcombe's interval of p_A − p_B and the exact McNemar p-value over the
    dialogues both hold; None when they hold none in common."""
    common = [key for key in a if key in b]
    if not common:
        return None
    for run, outcomes in (("A", a), ("B", b)):
        bad = next((key for key in common if outcomes[key] not in (0, 1)), None)
        if bad is not None:
            raise ValueError(f"run {run}'s outcome for {bad!r} is {outcomes[bad]!r}, not 0 or 1")
    pairs = [(int(a[key]), int(b[key])) for key in common]
    both = pairs.count((1, 1))
    wins = pairs.count((1, 0))
    losses = pairs.count((0, 1))
    neither = pairs.count((0, 0))
    n = len(pairs)
    lo, hi = _newcombe(both, wins, losses, neither, Z95)
    return PairedDifference(
        n=n,
        rate_a=(both + wins) / n,
        rate_b=(both + losses) / n,
        both=both,
        wins=wins,
        losses=losses,
        neither=neither,
        lo=lo,
        hi=hi,
        p_value=mcnemar_exact(wins, losses),
        unpaired_a=len(a) - n,
        unpaired_b=len(b) - n,
    )


def _verdict_figures(
    paired: PairedDifference | Mapping[str, Any], keys: Sequence[str] = ("lo", "hi", "p_value")
) -> dict[str, float]:
    """The figures `keys` of a `PairedDifference` or of its `as_dict` (a report's JSON)."""
    if isinstance(paired, PairedDifference):
        return {k: float(getattr(paired, k)) for k in keys}
    missing = [
        k for k in keys if isinstance(paired.get(k), bool) or not isinstance(paired.get(k), int | float)
    ]
    if missing:
        raise ValueError(f"a paired difference needs {', '.join(keys)}; missing {', '.join(missing)}")
    return {k: float(paired[k]) for k in keys}


def verdict(paired: PairedDifference | Mapping[str, Any]) -> str:
    """The verdict rule on a paired difference (a `PairedDifference` or its `as_dict`): `SHOWN`
    when its 95 % interval excludes 0 and the exact McNemar p < `ALPHA`, `BORDERLINE` when
    exactly one of the two holds, `NOT_SHOWN` when neither (module docstring)."""
    f = _verdict_figures(paired)
    votes = (f["lo"] > 0 or f["hi"] < 0) + (f["p_value"] < ALPHA)
    return (NOT_SHOWN, BORDERLINE, SHOWN)[votes]


def _signed(x: float, digits: int) -> str:
    """x with its sign and `digits` decimals, more where those would write a bound that is not
    0 as 0 (an interval that excludes 0 never reads "+0.00")."""
    text = f"{x:+.{digits}f}"
    while x != 0 and float(text) == 0 and digits < 6:
        digits += 1
        text = f"{x:+.{digits}f}"
    return text


def _p_text(p: float) -> str:
    """The p-value as a sentence writes it: "= 0.111" (3 significant digits, more where those would
    round it onto `ALPHA`), or "< 1e-06" for a p that a report's JSON rounded to 0 (an exact p is
    never 0)."""
    if p < 5e-7:
        return "< 1e-06"
    text = f"{p:.3g}"
    return "= " + (f"{p:.6g}" if float(text) == ALPHA and p != ALPHA else text)


def verdict_sentence(paired: PairedDifference | Mapping[str, Any], *, points: bool = False) -> str:
    """The verdict of a paired difference with both of its figures: "not shown: +0.15 [−0.02,
    +0.31], McNemar p = 0.111"; a borderline one says which of the two says the difference is not
    0: "borderline: +0.16 [+0.01, +0.31] excludes 0, McNemar p = 0.0596 is not below 0.05".
    `points`: the difference and its interval in percentage points ("+15.0 pp [−1.8, +30.8]")."""
    f = _verdict_figures(paired, ("diff", "lo", "hi", "p_value"))
    diff, lo, hi, p = f["diff"], f["lo"], f["hi"], f["p_value"]
    scale, digits, unit = (100.0, 1, " pp") if points else (1.0, 2, "")
    interval = f"{_signed(scale * diff, digits)}{unit} [{_signed(scale * lo, digits)}, {_signed(scale * hi, digits)}]"
    said = verdict(paired)
    if said != BORDERLINE:
        return f"{said}: {interval}, McNemar p {_p_text(p)}"
    if lo > 0 or hi < 0:
        return f"{said}: {interval} excludes 0, McNemar p {_p_text(p)} is not below {ALPHA:g}"
    return f"{said}: McNemar p {_p_text(p)} is below {ALPHA:g}, {interval} includes 0"
