from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from detector.core.stats import (
    bonferroni,
    dual_key_sf,
    gamma_sf,
    gamma_upper_log10,
    gamma_upper_log10_many,
    holm,
)


@pytest.mark.parametrize("n,score", [(1, 0.5), (10, 12.0), (200, 260.0), (5000, 5100.0)])
def test_gamma_p_value_matches_scipy_where_scipy_does_not_underflow(n, score):
    p, lp = gamma_sf(score, n)
    assert p == pytest.approx(stats.gamma.sf(score, n), rel=1e-10)
    assert lp == pytest.approx(math.log10(stats.gamma.sf(score, n)), rel=1e-10)


def test_gamma_p_value_keeps_its_log_far_below_float64():
    p, lp = gamma_sf(20000.0, 2000)
    assert p == 0.0 and lp < -3000
    # the integer-shape series in log space: log Q(n, S) = -S + log sum_k S^k / k!
    k = np.arange(2000)
    exact = (
        -20000.0 + special.logsumexp(k * math.log(20000.0) - special.gammaln(k + 1))
    ) / math.log(10)
    assert lp == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(
    "n,score", [(16536, 31341.03820721412), (45000, 60000.0), (300, 1500.0), (20000, 26000.0)]
)
def test_long_texts_get_the_exact_tail_where_mpmath_stops_converging(n, score):
    # (16536, 31341.04) made mpmath's series raise NoConvergence on a 45k-token text.
    _, lp = gamma_sf(score, n)
    k = np.arange(n)  # integer shape: log Q(n, S) = -S + log sum_k S^k / k!, exactly
    exact = (-score + special.logsumexp(k * math.log(score) - special.gammaln(k + 1))) / math.log(
        10
    )
    assert lp == pytest.approx(exact, rel=1e-9)


def test_no_scored_tokens_or_a_non_positive_score_gives_p_one():
    assert gamma_sf(0.0, 0) == (1.0, 0.0)
    assert gamma_sf(-1.0, 5) == (1.0, 0.0)
    assert gamma_sf(3.0, 0) == (1.0, 0.0)


def test_dual_key_p_value_is_the_moment_matched_gamma():
    alpha, n, score = 0.1, 300, 420.0
    v = (1 - alpha) ** 2 + alpha**2
    p, lp = dual_key_sf(score, n, alpha)
    assert p == pytest.approx(special.gammaincc(n / v, score / v), rel=1e-10)
    assert dual_key_sf(1e5, 10000, 0.3)[1] < -300
    with pytest.raises(ValueError):
        dual_key_sf(1.0, 1, 1.5)


def test_sums_of_exponentials_give_uniform_p_values():
    rng = np.random.default_rng(11)
    n = 50
    ps = [gamma_sf(float(rng.exponential(size=n).sum()), n)[0] for _ in range(3000)]
    assert stats.kstest(ps, "uniform").pvalue > 1e-3


def test_holm_matches_its_definition_and_is_never_below_the_raw_p():
    rng = np.random.default_rng(2)
    for m in (1, 2, 5, 17):
        ps = rng.uniform(1e-6, 1, size=m)
        adj = 10 ** holm(np.log10(ps))
        order = np.argsort(ps)
        want = np.empty(m)
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * ps[i]))
            want[i] = running
        assert np.allclose(adj, want, rtol=1e-12)
        assert (adj >= ps - 1e-15).all()
        assert (adj <= 10 ** bonferroni(np.log10(ps)) + 1e-15).all()


def test_corrections_are_monotone_in_the_raw_p_values():
    lp = np.log10(np.array([0.001, 0.02, 0.5, 0.004]))
    adj = holm(lp)
    order = np.argsort(lp)
    assert (np.diff(adj[order]) >= 0).all()
    assert bonferroni(lp, m=10)[0] == pytest.approx(math.log10(0.01))
    with pytest.raises(ValueError):
        bonferroni(lp, m=2)


def test_the_vectorized_tail_is_the_scalar_one_everywhere():
    shape = np.array([0.0, 3.0, 5.0, 200.0, 200.0, 45000.0, 10.0])
    x = np.array([4.0, 0.0, 2.5, 260.0, 2600.0, 31341.0, -1.0])  # the 5th and 6th underflow
    many = gamma_upper_log10_many(shape, x)
    scalar = [min(0.0, gamma_upper_log10(a, z)) for a, z in zip(shape, x, strict=True)]
    assert many == pytest.approx(scalar, rel=1e-12, abs=1e-12)
    assert many[4] < -300 and many[0] == many[1] == many[6] == 0.0
