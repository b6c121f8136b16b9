"""The model-agnostic statistics beside the Gamma sum (benchmarks/research/gof.py): their
definitions against brute force, the truncated sum's exact null, the simulated table on
fresh null draws, and the null on real human text of three genres and CJK under random keys."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from benchmarks.research import gof
from detector.core.config import as_key_config
from detector.evidence.detection import detect_config
from detector.evidence.localize import exp_scores
from detector.text.tokenizers import load_tokenizer


def _brute_tr_gof(scores: np.ndarray, s: float) -> float:
    """``n sup_{r >= p_(1)} K_s^+(F_n(r), r)`` on a fine grid plus the order statistics."""
    p = np.sort(np.exp(-scores))
    n = p.size
    grid = np.unique(np.concatenate([p, np.linspace(p[0], 1.0, 20001)[:-1]]))
    best = 0.0
    for r in grid:
        u = float((p <= r).sum()) / n
        if u <= r:
            continue
        u_, r_ = mpmath.mpf(u), mpmath.mpf(r)
        if s == 1.0:
            k = u_ * mpmath.log(u_ / r_) + (
                (1 - u_) * mpmath.log((1 - u_) / (1 - r_)) if u < 1 else 0
            )
        else:
            k = (1 - u_**s * r_ ** (1 - s) - (1 - u_) ** s * (1 - r_) ** (1 - s)) / (s * (1 - s))
        best = max(best, n * float(k))
    return best


@pytest.mark.parametrize("s", [2.0, 1.0, 1.5])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tr_gof_is_the_supremum_of_the_divergence_over_r(s, seed):
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.standard_exponential(40), 3.0 + rng.standard_exponential(8)])
    got = float(gof._gof_rows(np.sort(np.exp(-scores))[None, :], s)[0])
    assert got == pytest.approx(_brute_tr_gof(scores, s), rel=1e-6)


def test_higher_criticism_is_the_largest_standardized_excess_among_the_qualifying_order_stats():
    rng = np.random.default_rng(4)
    scores = np.concatenate([rng.standard_exponential(90), 4.0 + rng.standard_exponential(10)])
    p = np.sort(np.exp(-scores))
    n = p.size
    want = max(
        math.sqrt(n) * ((i + 1) / n - p[i]) / math.sqrt(p[i] * (1 - p[i]))
        for i in range(n // 2)
        if p[i] > 1.0 / n
    )
    assert gof.higher_criticism(scores) == pytest.approx(want, rel=1e-12)
    assert gof.statistic("hc", scores) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(("n", "cut"), [(12, 0.5), (60, 1.0), (150, 2.0), (300, 3.0)])
def test_the_truncated_sum_tail_is_exact(n, cut):
    rng = np.random.default_rng(n)
    draws = np.maximum(rng.standard_exponential((40_000, n)) - cut, 0.0).sum(axis=1)
    for level in (0.1, 0.01):
        x = float(np.quantile(draws, 1.0 - level))
        got = 10.0 ** gof.truncated_sum_sf(x, n, cut)
        simulated = float((draws >= x).mean())
        sd = math.sqrt(level * (1 - level) / draws.size)
        assert abs(got - simulated) <= 4 * sd + 1e-4


def test_the_truncated_sum_tail_against_the_mixture_at_high_precision():
    n, cut, x = 40, 1.5, 30.0
    q = mpmath.e ** (-cut)
    want = mpmath.fsum(
        mpmath.binomial(n, k) * q**k * (1 - q) ** (n - k) * mpmath.gammainc(k, x, regularized=True)
        for k in range(1, n + 1)
    )
    assert gof.truncated_sum_sf(x, n, cut) == pytest.approx(float(mpmath.log10(want)), rel=1e-9)


def test_the_truncated_sum_reads_deep_tails_and_edges():
    assert gof.truncated_sum_sf(0.0, 100, 1.0) == 0.0
    assert gof.truncated_sum_sf(5.0, 0, 1.0) == 0.0
    deep = gof.truncated_sum_sf(2000.0, 200, 1.0)
    assert -900 < deep < -500  # a Gamma tail near 1e-650, not 0 or -inf
    lps = [gof.truncated_sum_sf(x, 200, 1.0) for x in np.linspace(10, 3000, 60)]
    assert all(b <= a for a, b in zip(lps, lps[1:], strict=False))


def test_bad_scores_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        gof.tail_p_values([1.0, -0.5])
    with pytest.raises(ValueError, match="one-dimensional"):
        gof.tail_p_values([[1.0]])
    with pytest.raises(ValueError, match="cut"):
        gof.log10_p("truncated_sum", [1.0, 2.0])


@pytest.mark.parametrize("name", sorted(gof.ROWS))
@pytest.mark.parametrize("n", [37, 150, 613])
def test_the_simulated_table_holds_its_level_on_fresh_null_draws(name, n):
    """Off-grid n (read at the next grid point up) on draws the table was not built from."""
    rng = np.random.default_rng([99, n])
    draws = 4000
    lps = np.array(
        [gof.log10_p(name, rng.standard_exponential(n)) for _ in range(draws)], np.float64
    )
    for level in (0.05, 0.01):
        sd = math.sqrt(level * (1 - level) / draws)
        assert (lps <= math.log10(level)).mean() <= level + 3 * sd
    assert (lps <= math.log10(0.05)).mean() >= 0.05 / 3  # not vacuous: it does reject


def test_the_table_abstains_above_its_grid_and_floors_at_its_smallest_probability():
    big = np.full(gof.GRID[-1] + 1, 20.0)
    assert gof.log10_p("hc", big) == 0.0
    huge = np.full(200, 3.0)  # every p = 0.05 > 1/n: HC+ counts them too
    floor = math.log10(gof.ALPHAS[-1])
    for name in gof.ROWS:
        assert gof.log10_p(name, huge) >= floor - 1e-9
        assert gof.log10_p(name, huge) <= -3.0  # 40,000 draws resolve 1e-3


def test_a_sparse_strong_signal_is_caught_more_often_by_the_truncated_sum():
    """One token in twenty carries a strong keyed draw (token probability 0.01), the rest are
    forced (Exp(1), the null's law): the sparse mixture the truncation is for. A dense signal
    (three in ten at 0.1) is the Gamma sum's: there the truncation loses."""
    from detector.core.stats import gamma_sf

    def caught(n: int, share: float, q: float, cut: float, seed: int) -> tuple[int, int]:
        rng = np.random.default_rng(seed)
        by_sum = by_cut = 0
        for _ in range(300):
            r = rng.random(n) ** np.where(rng.random(n) < share, q, 1.0)  # R^q where carried
            s = -np.log1p(-r)
            by_sum += gamma_sf(float(s.sum()), n)[1] <= -2
            by_cut += gof.log10_p("truncated_sum", s, cut=cut) <= -2
        return by_sum, by_cut

    by_sum, by_cut = caught(200, 0.05, 0.01, 3.0, 8)
    assert by_cut >= by_sum + 40
    by_sum, by_cut = caught(100, 0.3, 0.1, 2.0, 9)
    assert by_sum >= by_cut


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def _cjk_texts() -> list[str]:
    from pathlib import Path

    from babel.messages.pofile import read_po

    root = Path(__file__).resolve().parents[2] / "locale"
    out: list[str] = []
    for language in ("ja", "ko", "zh_Hans"):
        with (root / language / "LC_MESSAGES" / "django.po").open("rb") as handle:
            catalog = read_po(handle)
        for m in catalog:
            if m.id and m.string:
                parts = m.string if isinstance(m.string, (tuple, list)) else (m.string,)
                out.extend(str(p) for p in parts if p)
    return out


@pytest.mark.slow
def test_the_null_holds_on_human_text_of_three_genres_and_cjk(tokenizer):
    """Real text under random keys, scored as the product scores (de-duplication and the
    n-gram table): the tail p-values are uniform (KS) and every statistic keeps its level."""
    from detector.text import corpora

    table = tokenizer.ngram_table
    pieces: dict[str, list[np.ndarray]] = {
        g: [
            np.asarray(tokenizer.encode(t), np.int64)
            for t in corpora.corpus(tokenizer, g, 60).texts
        ]
        for g in corpora.GENRES
    }
    cjk = np.asarray(tokenizer.encode("\n".join(_cjk_texts())), np.int64)
    pieces["cjk"] = [cjk[i : i + 250] for i in range(0, cjk.size - 250, 250)][:60]
    keys = [int(k) for k in np.random.default_rng(3).integers(1, 2**63, 12)]
    for genre, texts in pieces.items():
        assert len(texts) >= 40, genre
        p_all, flagged, tests = [], dict.fromkeys([*gof.ROWS, "trunc"], 0), 0
        for key in keys:
            config = as_key_config(key)
            for ids in texts:
                exp = exp_scores(detect_config(ids, config, ngrams=table), config)
                p_all.append(gof.tail_p_values(exp))
                tests += 1
                for name in gof.ROWS:
                    flagged[name] += gof.log10_p(name, exp) <= -2
                flagged["trunc"] += gof.log10_p("truncated_sum", exp, cut=1.5) <= -2
        p = np.concatenate(p_all)
        assert stats.kstest(p, "uniform").pvalue > 1e-3, genre
        bound = 0.01 * tests + 3 * math.sqrt(0.01 * tests)
        for name, count in flagged.items():
            assert count <= bound, (genre, name, count, tests)
