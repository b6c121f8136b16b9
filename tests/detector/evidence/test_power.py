"""detector.evidence.power against simulation: the per-token score model and the Gamma-sum power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from detector.evidence import power

R = 20_000  # simulated texts per power estimate: a Monte Carlo sd of at most 0.0035


def _mc_tolerance(p: float, draws: int = R) -> float:
    return 4.0 * math.sqrt(max(p * (1.0 - p), 1e-4) / draws)


def _keyed_scores(probs: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Scores ``[draws, positions]`` of the token the Gumbel-max rule picks at each position:
    ``argmax_x u_x^(1/p_x)`` with i.i.d. uniforms, scored ``-log(1 - u)``."""
    u = rng.random((draws, *probs.shape))
    choice = np.argmax(np.log(u) / probs[None], axis=2)
    return -np.log1p(-np.take_along_axis(u, choice[..., None], 2)[..., 0])


def _low_entropy(n: int, rng: np.random.Generator, top: tuple[float, float]) -> np.ndarray:
    """``[n, 8]`` distributions with a top token of probability in ``top``, the rest spread."""
    p_top = rng.uniform(*top, n)
    rest = rng.dirichlet(np.full(7, 0.5), n) * (1.0 - p_top)[:, None]
    return np.concatenate([p_top[:, None], rest], axis=1)


def test_a_forced_token_scores_like_the_null_and_a_rarer_one_more():
    assert power.expected_score(1.0) == pytest.approx(1.0, abs=1e-12)
    assert power.expected_score(0.5) == pytest.approx(1.5, abs=1e-12)  # psi(3) + gamma = 3/2
    assert np.all(np.diff(power.expected_score([0.9, 0.5, 0.1, 0.01])) > 0)
    with pytest.raises(ValueError):
        power.expected_score(0.0)


def test_score_moments_match_keyed_sampling_over_a_mixture():
    rng = np.random.default_rng(3)
    probs = _low_entropy(6, rng, (0.4, 0.95))
    sims = _keyed_scores(probs, 100_000, rng)
    m = power.score_moments(probs)
    np.testing.assert_allclose(sims.mean(0), m.mean, atol=4 * np.sqrt(m.variance.max() / 100_000))
    np.testing.assert_allclose(sims.var(0), m.variance, rtol=0.06)
    np.testing.assert_allclose(power.position_expected_score(probs), m.mean, rtol=1e-12)


def test_inverse_probability_inverts_the_expected_score():
    p = np.array([1.0, 0.9, 0.5, 0.1, 1e-3])
    np.testing.assert_allclose(1.0 / power.inverse_probability(power.expected_score(p)), p, 1e-9)


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_power_without_signal_is_the_level(n):
    """Null tokens (expected score 1): the saddlepoint of a Gamma(n, 1) sum at its quantile."""
    for level in (-2.0, -4.0):
        assert power.power(np.ones(n), level) == pytest.approx(10**level, rel=0.01)
        assert power.constant_power(n, 1.0, level) == pytest.approx(10**level, rel=0.01)


@pytest.mark.parametrize("n,low", [(40, 0.3), (150, 0.6), (400, 0.85)])
def test_saddlepoint_power_agrees_with_the_simulated_gamma_sum_test(n, low):
    """Tokens of one probability each (``s = -log(1 - R^p)``): simulated power of the test at
    its exact Gamma(n, 1) critical value, against the saddlepoint."""
    rng = np.random.default_rng(n)
    p = rng.uniform(low, 1.0, n)
    sums = -np.log1p(-(rng.random((R, n)) ** p)).sum(axis=1)
    e = power.expected_score(p)
    for level in (-2.0, -3.0):
        simulated = float(np.mean(sums >= power.critical_sum(n, level)))
        assert power.power(e, level) == pytest.approx(simulated, abs=_mc_tolerance(simulated))


@pytest.mark.parametrize("n,top", [(40, (0.5, 0.995)), (150, (0.85, 0.995))])
def test_power_with_variances_agrees_with_keyed_sampling_over_mixtures(n, top):
    """Low-entropy positions (a mixture over 8 tokens each), sampled by the keyed rule: the
    Edgeworth power from the exact moments agrees with the simulated power."""
    rng = np.random.default_rng(n + 1)
    probs = _low_entropy(n, rng, top)
    sums = _keyed_scores(probs, 10_000, rng).sum(axis=1)
    m = power.score_moments(probs)
    for level in (-2.0, -3.0):
        simulated = float(np.mean(sums >= power.critical_sum(n, level)))
        got = power.power(m.mean, level, variances=m.variance, third_cumulants=m.third)
        assert got == pytest.approx(simulated, abs=_mc_tolerance(simulated, 10_000) + 0.005)


def test_a_power_curve_round_trips_through_its_per_token_score():
    for needed in (50, 120, 300, 2000):
        e = power.mean_score_for(needed)
        assert power.constant_power(needed, e, -2.0) == pytest.approx(0.8, abs=1e-6)
        assert power.tokens_for_power(e, -2.0) == needed


def test_more_hypotheses_need_more_tokens():
    e = power.mean_score_for(200)
    assert power.tokens_for_power(e, math.log10(0.01 / 8)) > 200
    assert (
        power.curve_power(200, 200, math.log10(0.01 / 8))
        < 0.8
        < power.curve_power(400, 200, math.log10(0.01 / 8))
    )


def test_critical_sum_reaches_levels_below_float64():
    n = 50
    q = power.critical_sum(n, -400.0)
    from detector.core.stats import gamma_upper_log10

    assert gamma_upper_log10(n, q) == pytest.approx(-400.0, abs=1e-6)
    assert power.critical_sum(n, -2.0) == pytest.approx(special.gammainccinv(n, 0.01))
