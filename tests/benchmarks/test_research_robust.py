from __future__ import annotations

import math

import numpy as np
from scipy import stats

from benchmarks.research import robust
from detector.core.config import as_key_config
from detector.evidence.detection import Document, detect_batch, detect_ids
from tests.detector.planted import human_ids, watermark_ids

KEY = 0x5EED_0F_5A4A


def _scores(ids: np.ndarray, key: int) -> np.ndarray:
    d = detect_ids(ids, key)
    return d.token_scores[d.scored_mask]


def _substitute(ids: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    pool = human_ids()
    hit = rng.random(ids.shape[0]) < rate
    return np.where(hit, pool[rng.integers(0, pool.shape[0], ids.shape[0])], ids)


def _null_log10_ps(n: int, sims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, n])
    return np.array(
        [robust.robust_scores_log10_p(rng.standard_exponential(n))[1] for _ in range(sims)]
    )


def test_the_p_value_holds_its_level_on_fresh_null_draws():
    # Seeds unrelated to the table's; n off any round number. 4,000 draws: the count below
    # 0.05 has sd ~14, below 0.01 sd ~6.3.
    lp = np.concatenate([_null_log10_ps(n, 1000, seed=5) for n in (37, 151, 613, 1999)])
    for alpha in (0.05, 0.01):
        count = int((lp <= math.log10(alpha)).sum())
        expected, sd = alpha * lp.size, math.sqrt(alpha * (1 - alpha) * lp.size)
        assert expected - 3.5 * sd <= count <= expected + 3 * sd, (alpha, count)


def test_the_null_of_the_statistic_matches_the_table_by_ks():
    # Where R > 0 the table maps R to its tail probability: the p-values of fresh null draws,
    # conditioned on p <= 0.3 (all tabulated there), are uniform on (0, 0.3).
    lp = _null_log10_ps(240, 3000, seed=9)
    p = 10.0**lp
    tail = p[p <= 0.3] / 0.3
    assert stats.kstest(tail, "uniform").pvalue > 0.001


def test_human_prose_is_flagged_at_the_thresholds_rate():
    # 2,000 documents of 200 tokens (real prose under 8 keys): 1% gives 20 (sd 4.5), 2% 40.
    human = human_ids()
    configs = [as_key_config(1000 + key) for key in range(8)]
    docs = [Document(human[s : s + 200], configs) for s in range(0, 250 * 200, 200)]
    lps = [
        robust.robust_detection(d, c).log10_p
        for per_doc in detect_batch(docs)
        for d, c in zip(per_doc, configs, strict=True)
    ]
    assert len(lps) == 2000
    flagged = int((np.asarray(lps) <= -2.0).sum())
    assert flagged <= 20 + 3 * 4.5, flagged


def test_human_scores_follow_the_simulated_null_by_ks():
    human = human_ids()
    observed = [
        robust.robust_statistic(_scores(human[s : s + 300], 77)) for s in range(0, 600 * 300, 300)
    ]
    rng = np.random.default_rng(3)
    simulated = [robust.robust_statistic(rng.standard_exponential(280)) for _ in range(2000)]
    assert stats.ks_2samp(observed, simulated).pvalue > 0.001


def test_edited_watermarked_text_is_detected_beyond_the_sum_test():
    # Toy keyed-argmax text made weak (120 tokens) and edited hard (35% substitutions): the
    # sum test loses most of it; the edit model keeps more.
    rng = np.random.default_rng(1)
    robust_hits = sum_hits = 0
    for seed in range(40):
        ids = _substitute(watermark_ids(KEY, 120, seed), 0.35, rng)
        s = _scores(ids, KEY)
        robust_hits += robust.robust_scores_log10_p(s)[1] <= -2.0
        sum_hits += detect_ids(ids, KEY).log10_p <= -2.0
    assert robust_hits >= 20
    assert robust_hits >= sum_hits


def test_long_documents_use_the_markov_bound():
    r = 9.0
    assert robust.robust_log10_p(r, robust.EXACT_N + 10) == -r / math.log(10.0)
    assert robust.robust_log10_p(-1.0, robust.EXACT_N + 1) == 0.0
    assert robust.robust_log10_p(r, 0) == 0.0


def test_the_shipped_table_matches_the_statistic():
    alphas, fresh = robust.calibrate(sims=3000, seed=11, largest=64)
    shipped_alphas, shipped = robust._table()
    assert np.allclose(alphas, shipped_alphas)
    k = int(np.argmin(np.abs(alphas - 0.1)))  # 300 events: the quantile's sd is small
    assert np.allclose(fresh[16:65, k], shipped[16:65, k], atol=0.35)


def test_robust_ids_takes_a_key_or_a_config_and_reports_its_tokens():
    ids = watermark_ids(KEY, 150, seed=3)
    found = robust.robust_ids(ids, KEY)
    assert found.is_watermarked and found.log10_p < -5
    assert found.num_scored_tokens == detect_ids(ids, KEY).num_scored_tokens
    assert robust.robust_ids(ids, as_key_config(KEY)) == found
    assert not robust.robust_ids(ids, KEY + 1).is_watermarked
