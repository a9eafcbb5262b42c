"""Parity tests for diaforge.eval.stats: each interval and p-value against a hand computation of its closed
formula and, where one exists, against a value printed in a published source (cited beside it)."""

from __future__ import annotations

import math

import pytest

from diaforge.eval.stats import (
    ALPHA,
    BORDERLINE,
    NOT_SHOWN,
    SHOWN,
    Z95,
    bootstrap_mean,
    mcnemar_exact,
    mean_interval,
    newcombe_paired,
    paired_difference,
    share_interval,
    verdict,
    verdict_sentence,
    wilson,
)


def _wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    """The closed formula, written out again: centre ± half over 1 + z²/n."""
    z2 = Z95**2
    p = k / n
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return centre - half, centre + half


# --------------------------------------------------------------------------------------------
# Wilson
# --------------------------------------------------------------------------------------------


def test_wilson_13_of_40_by_hand():
    # p = 0.325, z² = 3.841459: centre = (0.325 + 0.048018) / 1.096036 = 0.340334,
    # half = (1.959964 / 1.096036) · sqrt(0.325 · 0.675 / 40 + 3.841459 / 6400)
    #      = 1.788229 · sqrt(0.005484375 + 0.000600228) = 1.788229 · 0.078004 = 0.139489.
    lo, hi = wilson(13, 40)
    assert lo == pytest.approx(0.340334 - 0.139489, abs=2e-6)
    assert hi == pytest.approx(0.340334 + 0.139489, abs=2e-6)
    assert (lo, hi) == pytest.approx(_wilson_by_hand(13, 40), abs=1e-12)
    assert (round(lo, 2), round(hi, 2)) == (0.20, 0.48)  # the "0.325 [0.20, 0.48] n=40"


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        # Newcombe RG (1998), "Two-sided confidence intervals for the single proportion: comparison
        # of seven methods", Stat Med 17:857-872, Table II, method 3 (score interval, no continuity
        # correction), 95 %: the four worked examples.
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
        # Fagerland MW, Lydersen S, Laake P (2017), "Statistical Analysis of Contingency Tables",
        # chapter 2, Wilson score interval of 13/16: 0.5699 to 0.9341 (as pinned by the tests of
        # its companion R package, ocbe-uio/contingencytables, tests/testthat/test-ch2.R).
        (13, 16, 0.5699, 0.9341),
    ],
)
def test_wilson_matches_published_values(k, n, lo, hi):
    got = wilson(k, n)
    assert got is not None
    assert (round(got[0], 4), round(got[1], 4)) == (lo, hi)


def test_wilson_edges():
    assert wilson(0, 0) is None
    # k = 0: the lower end is 0 and the upper z²/(n + z²) (the centre equals the half-width).
    assert wilson(0, 4) == pytest.approx((0.0, Z95**2 / (4 + Z95**2)), abs=1e-12)
    # Symmetry: the interval of (n − k)/n is 1 minus that of k/n, reversed.
    lo, hi = wilson(3, 11)
    lo2, hi2 = wilson(8, 11)
    assert (lo2, hi2) == pytest.approx((1 - hi, 1 - lo), abs=1e-12)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(5, 4)
    assert share_interval(13, 40) == {"k": 13, "n": 40, "lo": 0.200845, "hi": 0.479823}
    assert share_interval(0, 0) == {"k": 0, "n": 0, "lo": None, "hi": None}


# --------------------------------------------------------------------------------------------
# The bootstrap of a mean
# --------------------------------------------------------------------------------------------


def test_bootstrap_of_a_mean_by_hand():
    # FTR values 0, 0, 1, 0 (mean 0.25). A resample mean is k/4 with k ~ Binomial(4, 1/4):
    # P(k = 0) = 0.316 > 0.025, so the 51st of 2000 sorted means is 0; P(k >= 3) = 0.0508 > 0.025
    # and P(k = 4) = 0.0039 < 0.025, so the 1950th is 0.75.
    assert bootstrap_mean([0, 0, 1, 0]) == (0.0, 0.75)
    assert mean_interval([0, 0, 1, 0]) == {"mean": 0.25, "n": 4, "lo": 0.0, "hi": 0.75}
    # FTR can exceed 1; constant values give a zero-width interval; nothing gives None.
    assert bootstrap_mean([2.0] * 5) == (2.0, 2.0)
    assert bootstrap_mean([]) is None
    assert mean_interval([]) == {"mean": None, "n": 0, "lo": None, "hi": None}


def test_bootstrap_of_a_share_lands_on_the_binomial_quantiles():
    # 13 ones among 40: the resample mean is Binomial(40, 0.325) / 40, whose 2.5 % and 97.5 %
    # quantiles are 7/40 = 0.175 and 19/40 = 0.475 (cumulative sums of C(40,k) 0.325^k 0.675^(40-k)).
    values = [1] * 13 + [0] * 27
    assert bootstrap_mean(values) == (0.175, 0.475)
    assert bootstrap_mean(values) == bootstrap_mean(values)  # seeded: the same every time


# --------------------------------------------------------------------------------------------
# McNemar and the paired interval
# --------------------------------------------------------------------------------------------


def test_mcnemar_exact_by_hand():
    # b = 1, c = 8: p = 2 · (C(9,0) + C(9,1)) / 2^9 = 2 · 10 / 512.
    assert mcnemar_exact(1, 8) == 0.0390625 == mcnemar_exact(8, 1)
    # b = 3, c = 13: 2 · (1 + 16 + 120 + 560) / 2^16 = 0.021271, the exact binomial test of 13/16
    # against 1/2 (Fagerland et al. 2017, chapter 2: P = 0.02127).
    assert mcnemar_exact(3, 13) == 2 * 697 / 2**16
    assert round(mcnemar_exact(3, 13), 5) == 0.02127
    # b = 6, c = 16: 2 · (1 + 22 + 231 + 1540 + 7315 + 26334 + 74613) / 2^22 = 0.05248.
    assert mcnemar_exact(6, 16) == 2 * 110056 / 2**22
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(4, 4) == 1.0


def test_newcombe_paired_matches_the_published_example():
    # Fagerland MW, Lydersen S, Laake P (2017), chapter 8 (the paired 2x2 table): complete response
    # before and after consolidation therapy (Cavo et al. 2012), a, b, c, d = 59, 6, 16, 80.
    # Newcombe square-and-add: estimate -0.0621 (95 % CI -0.1186 to -0.0046), as pinned by
    # ocbe-uio/contingencytables, tests/testthat/test-ch8.R.
    lo, hi = newcombe_paired(59, 6, 16, 80)
    assert (round(lo, 4), round(hi, 4)) == (-0.1186, -0.0046)
    # The interval excludes 0 while the exact test gives p = 0.052: a borderline difference.
    assert mcnemar_exact(6, 16) > 0.05


def test_newcombe_paired_by_hand_with_no_correlation():
    # a, b, c, d = 0, 2, 0, 2: p_A = 2/4, p_B = 0/4, Δ = 0.5; the margin a + c is 0, so φ = 0.
    # lo = 0.5 − sqrt((0.5 − l_A)² + (u_B − 0)²), hi = 0.5 + sqrt((u_A − 0.5)² + 0²).
    l_a, u_a = _wilson_by_hand(2, 4)
    _, u_b = _wilson_by_hand(0, 4)
    lo, hi = newcombe_paired(0, 2, 0, 2)
    assert lo == pytest.approx(0.5 - math.sqrt((0.5 - l_a) ** 2 + u_b**2), abs=1e-12)
    assert hi == pytest.approx(u_a, abs=1e-12)
    assert (round(lo, 6), round(hi, 6)) == (-0.102051, 0.849961)
    assert newcombe_paired(0, 0, 0, 0) is None


def _newcombe_by_hand(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    n = a + b + c + d
    p_a, p_b = (a + b) / n, (a + c) / n
    (l_a, u_a), (l_b, u_b) = _wilson_by_hand(a + b, n), _wilson_by_hand(a + c, n)
    cross = a * d - b * c
    corrected = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0)
    phi = corrected / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    lo = p_a - p_b - math.sqrt((p_a - l_a) ** 2 - 2 * phi * (p_a - l_a) * (u_b - p_b) + (u_b - p_b) ** 2)
    hi = p_a - p_b + math.sqrt((u_a - p_a) ** 2 - 2 * phi * (u_a - p_a) * (p_b - l_b) + (p_b - l_b) ** 2)
    return lo, hi


def test_paired_difference_of_two_runs():
    # 20 dialogues in common: 3 right in both, 1 only in A, 8 only in B, 8 in neither; A also has
    # "a-extra", B "b-extra" and "b-more" (left out). Δ = (1 − 8)/20 = −0.35; ad − bc = 24 − 8 =
    # 16 > n/2 = 10, so φ = 6 / sqrt(4 · 16 · 11 · 9); McNemar p = 0.0390625 (b = 1, c = 8).
    outcomes = [(1, 1)] * 3 + [(1, 0)] + [(0, 1)] * 8 + [(0, 0)] * 8
    a = {f"d{i}": x for i, (x, _) in enumerate(outcomes)} | {"a-extra": 1}
    b = {f"d{i}": y for i, (_, y) in enumerate(outcomes)} | {"b-extra": 0, "b-more": 1}
    d = paired_difference(a, b)
    assert d is not None
    assert (d.n, d.both, d.wins, d.losses, d.neither) == (20, 3, 1, 8, 8)
    assert (d.rate_a, d.rate_b, d.diff) == (0.2, 0.55, -0.35)
    assert (d.lo, d.hi) == pytest.approx(_newcombe_by_hand(3, 1, 8, 8), abs=1e-12)
    assert (round(d.lo, 4), round(d.hi, 4)) == (-0.5681, -0.0617)
    assert d.p_value == 0.0390625 and d.excludes_zero and d.verdict == SHOWN
    assert (d.unpaired_a, d.unpaired_b) == (1, 2)
    assert d.as_dict()["diff"] == -0.35 and d.as_dict()["excludes_zero"] is True
    assert d.as_dict()["verdict"] == "shown"
    # The other way round: the same counts mirrored, the interval negated.
    back = paired_difference(b, a)
    assert (back.wins, back.losses) == (8, 1)
    assert (back.lo, back.hi) == pytest.approx((-d.hi, -d.lo), abs=1e-12)


def test_paired_difference_edges():
    assert paired_difference({"x": 1}, {"y": 1}) is None  # no dialogue in common
    same = paired_difference({"x": 1, "y": 0}, {"x": 1, "y": 0})
    assert same is not None and same.diff == 0.0 and same.p_value == 1.0 and not same.excludes_zero
    assert same.verdict == NOT_SHOWN
    with pytest.raises(ValueError, match="not 0 or 1"):
        paired_difference({"x": 2}, {"x": 1})


# --------------------------------------------------------------------------------------------
# The verdict rule
# --------------------------------------------------------------------------------------------


def _table(a: int, b: int, c: int, d: int):
    """Two runs whose paired table is a, b, c, d (right in both, only in A, only in B, in neither)."""
    cells = [(1, 1)] * a + [(1, 0)] * b + [(0, 1)] * c + [(0, 0)] * d
    diff = paired_difference(
        {i: x for i, (x, _) in enumerate(cells)}, {i: y for i, (_, y) in enumerate(cells)}
    )
    assert diff is not None
    return diff


@pytest.mark.parametrize(
    ("table", "lo", "hi", "p", "expected"),
    [
        # b = 8, c = 1 of 20: [+0.0617, +0.5681] (the mirror of the table above), p = 20/512.
        ((3, 8, 1, 8), 0.0617, 0.5681, 0.0391, SHOWN),
        # The CPU's 730-dialogue model against the name-overlap floor (27 won, 14 lost of 80): the
        # interval excludes 0, p = 2 · Σ_{i ≤ 14} C(41, i) / 2^41 = 0.0596 does not reach 0.05.
        ((17, 27, 14, 22), 0.0079, 0.3066, 0.0596, BORDERLINE),
        # Fagerland et al.'s table: [−0.1186, −0.0046] excludes 0, p = 0.0525.
        ((59, 6, 16, 80), -0.1186, -0.0046, 0.0525, BORDERLINE),
        # `make demo`'s tuned model against the floor (30 won, 18 lost of 80): neither says so.
        ((13, 30, 18, 19), -0.0181, 0.3075, 0.1114, NOT_SHOWN),
        # No discordant dialogue: p = 1 and an interval around 0.
        ((5, 0, 0, 5), -0.1666, 0.1666, 1.0, NOT_SHOWN),
    ],
)
def test_verdict_on_hand_computed_tables(table, lo, hi, p, expected):
    a, b, c, d = table
    diff = _table(a, b, c, d)
    assert (round(diff.lo, 4), round(diff.hi, 4)) == (lo, hi)
    assert (diff.lo, diff.hi) == pytest.approx(_newcombe_by_hand(a, b, c, d), abs=1e-12)
    tail = sum(math.comb(b + c, i) for i in range(min(b, c) + 1))
    assert diff.p_value == pytest.approx(min(1.0, 2 * tail / 2 ** (b + c)), abs=1e-15)
    assert round(diff.p_value, 4) == p
    assert verdict(diff) == diff.verdict == expected
    # The rule reads a report's JSON (`as_dict`) the same way.
    assert verdict(diff.as_dict()) == expected == diff.as_dict()["verdict"]


def test_verdict_when_only_the_exact_test_says_so():
    # The other borderline: p < 0.05 while the interval holds 0. No table of n <= 40 gives it with
    # these two figures (the interval excludes 0 first), so the rule is fed the figures themselves.
    figures = {"diff": 0.1, "lo": -0.01, "hi": 0.2, "p_value": 0.03}
    assert verdict(figures) == BORDERLINE
    assert (
        verdict_sentence(figures)
        == "borderline: McNemar p = 0.03 is below 0.05, +0.10 [-0.01, +0.20] includes 0"
    )
    # The edges: p exactly at the level is not below it, and an interval ending at 0 holds 0.
    assert verdict({"lo": 0.0, "hi": 0.3, "p_value": 0.01}) == BORDERLINE
    assert verdict({"lo": 0.01, "hi": 0.3, "p_value": ALPHA}) == BORDERLINE
    assert verdict({"lo": 0.0, "hi": 0.3, "p_value": ALPHA}) == NOT_SHOWN
    with pytest.raises(ValueError, match="p_value"):
        verdict({"lo": 0.01, "hi": 0.3})


def test_verdict_sentence_prints_both_figures():
    assert verdict_sentence(_table(3, 8, 1, 8)) == "shown: +0.35 [+0.06, +0.57], McNemar p = 0.0391"
    assert verdict_sentence(_table(13, 30, 18, 19)) == "not shown: +0.15 [-0.02, +0.31], McNemar p = 0.111"
    assert verdict_sentence(_table(17, 27, 14, 22)) == (
        "borderline: +0.16 [+0.01, +0.31] excludes 0, McNemar p = 0.0596 is not below 0.05"
    )
    # A bound that excludes 0 is never written as 0; points: the demo's percentage points.
    assert verdict_sentence(_table(59, 6, 16, 80)) == (
        "borderline: -0.06 [-0.12, -0.005] excludes 0, McNemar p = 0.0525 is not below 0.05"
    )
    assert verdict_sentence(_table(13, 30, 18, 19), points=True) == (
        "not shown: +15.0 pp [-1.8, +30.8], McNemar p = 0.111"
    )
    # A p that a report's JSON rounded to 0 (it is 2 / 2^43 here) is not written as 0.
    assert verdict_sentence(_table(0, 43, 0, 37).as_dict()).endswith("McNemar p < 1e-06")
    # A p that rounds onto the level is written with the digits that tell it from the level.
    assert "p = 0.049996 is below" in verdict_sentence(
        {"diff": 0.1, "lo": -0.01, "hi": 0.2, "p_value": 0.049996}
    )
