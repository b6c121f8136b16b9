"""The arithmetic of a key's calibration: exact intervals and the power curve's reading."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from detector.evidence.calibration import PowerPoint, clopper_pearson, tokens_needed


def test_no_flagged_text_gives_the_closed_form_upper_bound():
    rate = clopper_pearson(0, 300)
    assert rate.rate == 0.0 and rate.low == 0.0
    assert rate.high == pytest.approx(1 - 0.025 ** (1 / 300), rel=1e-9)


def test_the_bounds_are_the_beta_quantiles():
    rate = clopper_pearson(7, 250)
    assert rate.low == pytest.approx(stats.beta.ppf(0.025, 7, 244), rel=1e-9)
    assert rate.high == pytest.approx(stats.beta.ppf(0.975, 8, 243), rel=1e-9)
    assert rate.rate == pytest.approx(7 / 250)


def test_the_interval_covers_the_true_rate_at_least_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    n, p = 200, 0.01
    covered = [
        (r := clopper_pearson(int(k), n)).low <= p <= r.high for k in rng.binomial(n, p, 2000)
    ]
    assert np.mean(covered) >= 0.95


def test_a_key_is_flagged_only_when_the_whole_interval_lies_above_the_threshold():
    assert clopper_pearson(12, 300).above(0.01)  # 4%: interval from about 2.1%
    assert not clopper_pearson(6, 300).above(0.01)  # 2%: interval reaches below 1%
    assert not clopper_pearson(0, 300).above(0.01)


def test_it_refuses_impossible_counts():
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)
    with pytest.raises(ValueError):
        clopper_pearson(0, 0)


def _curve(*detected: int, texts: int = 8) -> list[PowerPoint]:
    return [PowerPoint(25 * (i + 1), texts, d) for i, d in enumerate(detected)]


def test_tokens_needed_is_the_first_length_from_which_power_stays_reached():
    assert tokens_needed(_curve(2, 5, 7, 8)) == 75  # 7/8 = 0.875
    assert tokens_needed(_curve(7, 5, 7, 8)) == 75  # an early lucky length does not count
    assert tokens_needed(_curve(8, 8, 8)) == 25


def test_tokens_needed_is_none_when_the_longest_text_falls_short():
    assert tokens_needed(_curve(1, 3, 6)) is None
    assert tokens_needed([]) is None
