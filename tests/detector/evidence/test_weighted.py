"""The null tail of a weighted sum of Exp(1) scores, against exact values and simulation."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from detector.evidence.weighted import (
    log_sf_exact,
    log_sf_hypoexponential,
    log_sf_saddlepoint,
    weighted_sf,
)


def exact_hypoexponential(w: np.ndarray, x: float) -> float:
    """ln P[sum w_i s_i > x] from the closed form at 200 digits (distinct weights)."""
    with mpmath.workdps(200):
        ws = [mpmath.mpf(float(v)) for v in w]
        total = mpmath.mpf(0)
        for i, wi in enumerate(ws):
            c = mpmath.mpf(1)
            for j, wj in enumerate(ws):
                if j != i:
                    c *= wi / (wi - wj)
            total += c * mpmath.exp(-mpmath.mpf(x) / wi)
        return float(mpmath.log(total))


def exact_gamma(n: int, x: float) -> float:
    return float(mpmath.log(mpmath.gammainc(n, x, mpmath.inf, regularized=True)))


@pytest.mark.parametrize("n", [1, 2, 5, 12, 30])
@pytest.mark.parametrize("ratio", [0.5, 1.0, 2.0, 6.0, 60.0])
def test_the_tail_matches_the_closed_form_on_few_terms(n: int, ratio: float) -> None:
    w = np.random.default_rng(n).uniform(0.05, 3.0, n)
    x = ratio * float(w.sum())
    want = exact_hypoexponential(w, x)
    _, log10_p = weighted_sf(w, x)
    assert abs(log10_p * math.log(10) - want) <= 1e-9 * max(1.0, abs(want))


@pytest.mark.parametrize("ratio", [1.3, 3.0, 40.0])
def test_the_inversion_matches_the_closed_form(ratio: float) -> None:
    w = np.random.default_rng(7).uniform(0.1, 2.0, 24)
    x = ratio * float(w.sum())
    assert log_sf_exact(w, x) == pytest.approx(exact_hypoexponential(w, x), rel=1e-9, abs=1e-9)


# 48 weights 1 - 1/E[s] of a 200-token human prose chunk (clustered near 0.9) and a score
# 1.25 times their sum: the closed form cancels by more digits than its gap-based estimate
# carries (before 2026-12-01 it raised ArithmeticError from weighted_sf).
CLUSTERED = [
    0.9362642218656285, 0.9084384142703646, 0.8503679649024222, 0.027962040722686043,
    0.8927738410867166, 0.8839086934075009, 0.7255965903166595, 0.8721424584003196,
    0.5976898881368297, 0.8224162990533816, 0.9033528726597387, 0.847314299953065,
    0.929171544344651, 0.9221124135675285, 0.8198726661180964, 0.9451398673378881,
    0.7634908594909909, 0.9123671365850329, 0.8515578300741881, 0.7392589742123796,
    0.8430555162980875, 0.43338179490234097, 0.6270184880063536, 0.6837719314447572,
    0.7086008418472435, 0.905677278955938, 0.9089012981058413, 0.9397352671358434,
    0.42121323704269686, 0.8750997820951142, 0.8663209448441531, 0.27492252144421525,
    0.8329189365249352, 0.6726032946011892, 0.7943817047297212, 0.5894605710557479,
    0.04821683661748477, 0.9374794835049804, 0.8816912410985457, 0.8259119226754167,
    0.7100719137930714, 0.9025380548242882, 0.853581701706131, 0.8813155746946876,
    0.9306283815013308, 0.6123763372150508, 0.30107164177119583, 0.2680567007293374,
]  # fmt: skip


@pytest.mark.parametrize("x", [45.57822040423202, 80.0])
def test_the_closed_form_carries_the_digits_its_cancellation_needs(x: float) -> None:
    w = np.array(CLUSTERED)
    want = log_sf_exact(w, x)
    assert log_sf_hypoexponential(w, x) == pytest.approx(want, rel=1e-8)
    assert weighted_sf(w, x)[1] * math.log(10) == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("n", [60, 400, 3000])
@pytest.mark.parametrize("ratio", [1.02, 1.5, 3.0, 10.0])
def test_equal_weights_give_the_gamma_tail(n: int, ratio: float) -> None:
    want = exact_gamma(n, ratio * n)
    _, log10_p = weighted_sf(np.ones(n), ratio * n)
    assert log10_p * math.log(10) == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_the_saddlepoint_is_within_two_percent_of_p_in_far_tails() -> None:
    """Weights spread like a model's (many near 0, a few large), 80-2000 terms, tails from
    1e-30 to 1e-2000: the saddlepoint's ln p is within 0.02 of the exact inversion."""
    rng = np.random.default_rng(3)
    for n in (80, 400, 2000):
        w = rng.exponential(1.0, n) * (rng.random(n) < 0.6)
        mean = float(w.sum())
        for ratio in (2.5, 4.0, 10.0):
            x = ratio * mean
            exact = log_sf_exact(w, x)
            if exact > math.log(1e-30):
                continue
            assert abs(log_sf_saddlepoint(w, x) - exact) <= 0.02


def test_extreme_tails_stay_in_log_space() -> None:
    """Tails far below 1e-300 come out as logs, within 2% of p (saddlepoint region) and
    exactly where the closed form applies."""
    rng = np.random.default_rng(4)
    w = rng.uniform(0.2, 4.0, 300)
    x = 25.0 * float(w.sum())
    p, log10_p = weighted_sf(w, x)
    assert p == 0.0 and log10_p < -1000
    assert abs(log10_p * math.log(10) - log_sf_exact(w, x)) < 0.02
    small = rng.uniform(0.5, 2.0, 20)
    want = exact_hypoexponential(small, 400.0 * small.sum())
    assert want < -700 * math.log(10)
    assert log_sf_hypoexponential(small, 400.0 * small.sum()) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("n", [3, 40, 300])
def test_p_values_are_uniform_on_simulated_nulls(n: int) -> None:
    """Fixed weights, scores i.i.d. Exp(1): the p-values pass Kolmogorov-Smirnov against
    U(0, 1), and the fraction at or below 1% stays near 1%."""
    rng = np.random.default_rng(n)
    w = rng.exponential(1.0, n) * (rng.random(n) < 0.7) + 1e-3
    draws = 3000 if n < 10 else 600  # the exact inversion costs about 30 ms a draw
    ps = np.array([weighted_sf(w, float(w @ rng.exponential(1.0, n)))[0] for _ in range(draws)])
    assert stats.kstest(ps, "uniform").pvalue > 1e-3
    assert (ps <= 0.01).mean() <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / draws)


def test_no_positive_weight_or_no_score_gives_one() -> None:
    assert weighted_sf(np.zeros(5), 3.0) == (1.0, 0.0)
    assert weighted_sf(np.ones(5), 0.0) == (1.0, 0.0)
    assert weighted_sf(np.array([]), 1.0) == (1.0, 0.0)


def test_negative_or_non_finite_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        weighted_sf(np.array([1.0, -0.5]), 1.0)
    with pytest.raises(ValueError, match="finite"):
        weighted_sf(np.array([1.0, np.nan]), 1.0)
