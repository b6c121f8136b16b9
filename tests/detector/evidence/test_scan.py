"""The scan statistic (detector/evidence/scan.py): its window arithmetic, the batched audit
path, the shipped null table and the p-value read from it."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from detector.core.contexts import COMPILED_FROM
from detector.evidence import scan


def _brute_statistic(scores: np.ndarray, min_window: int) -> float:
    """min log10 P[Gamma(L, 1) >= S] over every window of at least ``min_window`` tokens."""
    cum = np.concatenate([[0.0], np.cumsum(scores)])
    best = 0.0
    for start in range(scores.shape[0] - min_window + 1):
        stops = np.arange(start + min_window, scores.shape[0] + 1)
        lp = scan.log10_gamma_sf(stops - start, cum[stops] - cum[start])
        best = min(best, float(lp.min()))
    return best


@pytest.mark.parametrize(
    ("length", "total"), [(32, 20.0), (32, 60.0), (200, 260.0), (1000, 1500.0), (64, 900.0)]
)
def test_the_gamma_tail_is_exact_in_range_and_close_where_a_float_underflows(length, total):
    exact = float(mpmath.log10(mpmath.gammainc(length, total, mpmath.inf, regularized=True)))
    got = float(scan.log10_gamma_sf(np.array([length]), np.array([total]))[0])
    if exact > -280:
        assert got == pytest.approx(exact, rel=1e-9)
    else:  # the asymptotic branch: ordered and within a fraction of a decade
        assert got < -280 and got == pytest.approx(exact, rel=1e-2)


def test_the_asymptotic_branch_keeps_windows_ordered_far_below_the_float():
    totals = np.linspace(800.0, 3000.0, 40)
    lp = scan.log10_gamma_sf(np.full(40, 64.0), totals)
    assert np.all(np.isfinite(lp)) and np.all(np.diff(lp) < 0)


def test_the_scan_finds_a_planted_window_and_never_crosses_a_blocked_position():
    rng = np.random.default_rng(5)
    scores = rng.standard_exponential(2000)
    scores[700:900] += 1.5
    found = scan.best_window(scores, np.zeros(2000, np.bool_))
    assert found is not None
    assert abs(found.start - 700) <= 40 and abs(found.stop - 900) <= 40
    blocked = np.zeros(2000, np.bool_)
    blocked[800] = True
    split = scan.best_window(scores, blocked)
    assert split is not None and not blocked[split.start : split.stop].any()
    assert split.log10_p > found.log10_p  # half of the signal is out of reach


def test_the_scan_is_close_to_the_exhaustive_minimum_and_never_below_it():
    """Coarse grid plus refinement against every window: never better than the true minimum
    (it is a minimum over a subset), and within a decade of it on planted and null texts."""
    rng = np.random.default_rng(8)
    for k in range(12):
        scores = rng.standard_exponential(400)
        if k % 2:
            a = int(rng.integers(0, 300))
            scores[a : a + 80] += 1.0
        exhaustive = _brute_statistic(scores, scan.MIN_WINDOW)
        statistic = scan.scan_statistic(scores)
        assert statistic >= exhaustive - 1e-9
        assert statistic <= exhaustive + 1.0


def test_shorter_than_the_smallest_window_gives_no_window():
    assert scan.best_window(np.ones(scan.MIN_WINDOW - 1), np.zeros(31, np.bool_)) is None
    assert scan.scan_statistic(np.ones(scan.MIN_WINDOW - 1)) == 0.0
    assert scan.scan_log10_p(-50.0, scan.MIN_WINDOW - 1) == 0.0


def test_the_batched_scan_finds_the_same_windows_as_one_text_at_a_time():
    """``scan.best_windows`` (the audit path) is the per-text scan, window for window: null
    texts, texts with a planted excess, short and tied ones, in one batch."""
    rng = np.random.default_rng(11)
    texts = [rng.standard_exponential(int(n)) for n in rng.integers(0, 900, 120)]
    for s in texts[::3]:  # a stretch of signal somewhere
        if s.shape[0] > 80:
            a = int(rng.integers(0, s.shape[0] - 60))
            s[a : a + 60] += rng.uniform(0.3, 2.0)
    texts += [np.ones(40), np.zeros(31), np.zeros(0), np.full(300, 2.0)]  # ties everywhere
    batched = scan.best_windows(texts)
    single = [scan.best_window(s, np.zeros(s.shape[0], np.bool_)) for s in texts]
    assert batched == single
    assert sum(w is not None for w in batched) > 100


@pytest.mark.parametrize("n", [COMPILED_FROM, COMPILED_FROM + 1, 5_003, 40_000])
def test_one_long_text_takes_the_compiled_coarse_pass_and_finds_the_same_window(n):
    """A long text alone (``detector.core.compiled.coarse_scan``, no family arrays) gets the
    window the numpy family finds: on the null, with a planted stretch, and with scores
    rounded so that many windows tie (the first maximum and the first minimum win)."""
    rng = np.random.default_rng(n)
    for trial in range(3):
        s = rng.standard_exponential(n)
        if trial:
            a = int(rng.integers(0, n - 500))
            s[a : a + 400] *= 1.5 + trial
        if trial == 2:
            s = s.round(1)
        want = scan.best_window(s, np.zeros(n, np.bool_))
        assert scan.best_windows([s]) == [want]  # alone: compiled
        assert scan.best_windows([s, s[:100]])[0] == want  # in a batch: the numpy family


def test_the_window_count_is_the_number_of_long_enough_windows():
    for n in (scan.MIN_WINDOW - 1, scan.MIN_WINDOW, 40, 100):
        brute = sum(1 for start in range(n) for stop in range(start + scan.MIN_WINDOW, n + 1))
        assert scan.num_windows(n) == brute


def test_the_p_value_is_monotone_and_meets_the_union_bound_beyond_the_table():
    """Inside the table the p-value is read from the simulation; beyond its smallest tail
    probability it is the union bound over every window (and above the grid, always)."""
    smallest = math.log10(scan.ALPHAS[-1])
    for n in (32, 100, 700, 5000, 100_000):  # the last one lies above the table's grid
        statistics = np.linspace(0.0, -40.0, 400)
        p = np.array([scan.scan_log10_p(float(t), n) for t in statistics])
        assert np.all(p <= 0.0) and np.all(np.diff(p) <= 1e-12)
        union = np.minimum(0.0, math.log10(scan.num_windows(n)) + statistics)
        deep = union < smallest - 1.0
        assert deep.any() and np.allclose(p[deep], union[deep], rtol=0, atol=1e-12)
        if n > scan.GRID[-1]:
            assert np.allclose(p, union, rtol=0, atol=1e-12)


def test_the_shipped_table_holds_on_fresh_null_draws():
    """A fresh simulated null (another seed than the table's) for 256 scored tokens: the
    table's p-value is uniform enough that 1,000 draws land 100 +- 40 below 0.1 and at most
    25 below 0.01 (Binomial(1000, 0.01) exceeds 25 with probability 1e-5). The union bound
    alone in place of the table (valid but loose) puts none below 0.1, and the table's row
    for 64 tokens read for these 256 puts 447 there (both checked)."""
    draws = scan.simulate(256, 1000, seed=77)
    p = np.array([scan.scan_log10_p(float(t), 256) for t in draws])
    assert 60 <= np.sum(p <= -1) <= 140
    assert np.sum(p <= -2) <= 25
