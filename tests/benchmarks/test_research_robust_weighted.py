from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from benchmarks.research import robust, robust_weighted
from detector.core.config import as_key_config
from detector.evidence.detection import Document, detect_batch, detect_ids
from detector.evidence.localize import exp_scores
from tests.detector.planted import human_ids
from tests.detector.toy import keyed_sample

KEY = 0x5EED_0F_5A4B


def _expected(probs: np.ndarray) -> np.ndarray:
    """``E[s]`` of the keyed draw from each row of ``probs`` (as ``assist.expected_score_of``)."""
    safe = np.where(probs > 0, probs, 1.0)
    f = special.digamma(1.0 / safe + 1.0) + robust_weighted.EULER_GAMMA
    return np.where(probs > 0, probs * f, 0.0).sum(-1)


def _text_only_expected(ids: np.ndarray) -> np.ndarray:
    """A stand-in for a model's ``E[s]``: any function of the text alone keeps the null."""
    return 1.0 + (ids % 11) / 2.0 * (ids % 3 > 0)


def test_effective_choices_invert_the_expected_score_of_equally_likely_tokens():
    k = np.array([1.0, 2.0, 10.0, 5000.0])
    e = special.digamma(1.0 + k) + robust_weighted.EULER_GAMMA
    assert np.allclose(robust_weighted.effective_choices(e), k, rtol=1e-3)
    assert robust_weighted.effective_choices([0.5, 1.0])[0] == 1.0


def test_a_text_without_choices_carries_nothing():
    scores = np.random.default_rng(0).standard_exponential(150) * 5
    found = robust_weighted.weighted_robust_test(scores, np.ones(150))
    assert found.statistic == pytest.approx(0.0, abs=1e-9)
    assert found.p_value == 1.0


def test_it_rejects_scores_and_weights_of_different_lengths():
    with pytest.raises(ValueError, match="expected scores"):
        robust_weighted.weighted_robust_test(np.ones(5), np.ones(4))


def test_the_p_value_holds_its_level_on_null_draws():
    # 1,500 null texts over three weight profiles: below 0.05 sd ~8.4, below 0.01 sd ~3.9.
    rng = np.random.default_rng(21)
    lps = []
    for n in (60, 200, 333):
        e = 1.0 + rng.exponential(1.5, n) * (rng.random(n) < 0.6)
        for _ in range(500):
            found = robust_weighted.weighted_robust_test(rng.standard_exponential(n), e)
            lps.append(found.log10_p)
    lp = np.asarray(lps)
    for alpha in (0.05, 0.01):
        count = int((lp <= math.log10(alpha)).sum())
        expected, sd = alpha * lp.size, math.sqrt(alpha * (1 - alpha) * lp.size)
        assert count <= expected + 3 * sd, (alpha, count)
        assert count >= expected - 3.5 * sd, (alpha, count)


def test_human_prose_is_flagged_at_the_thresholds_rate():
    # 1,200 documents of 200 tokens (real prose under 8 keys), weights from the text alone:
    # 1% gives 12 (sd 3.4).
    human = human_ids()
    configs = [as_key_config(2000 + key) for key in range(8)]
    docs = [Document(human[s : s + 200], configs) for s in range(0, 150 * 200, 200)]
    flagged = 0
    for doc, per_doc in zip(docs, detect_batch(docs), strict=True):
        for d, c in zip(per_doc, configs, strict=True):
            e = _text_only_expected(np.asarray(doc.token_ids)[d.scored_mask])
            flagged += robust_weighted.weighted_robust_test(exp_scores(d, c), e).log10_p <= -2.0
    assert flagged <= 12 + 3 * 3.4, flagged


def test_edited_text_with_forced_tokens_is_detected_beyond_the_unweighted_model():
    # Keyed-argmax toy text where two positions in three are near-forced (one logit far above
    # the rest): they carry no signal, and the unweighted edit model counts them as evidence
    # against the watermark. 25% substitutions.
    rng = np.random.default_rng(4)
    pool = human_ids()
    weighted_hits = plain_hits = 0
    for seed in range(30):
        logits = rng.normal(0.0, 1.0, size=(150, 400))
        forced = rng.random(150) < 2 / 3
        logits[forced, rng.integers(0, 400, int(forced.sum()))] += 12.0
        vocab = rng.choice(49152, 400, replace=False)
        ids = keyed_sample(KEY, logits, seed=seed, vocab_ids=vocab)
        probs = special.softmax(logits, axis=-1)
        hit = rng.random(150) < 0.25
        ids = np.where(hit, pool[rng.integers(0, pool.shape[0], 150)], ids)
        e = np.where(hit, 1.0, _expected(probs))  # an edited token's model reading: forced
        d = detect_ids(ids, KEY)
        s = exp_scores(d, as_key_config(KEY))
        weighted_hits += robust_weighted.weighted_robust_test(s, e[d.scored_mask]).log10_p <= -2.0
        plain_hits += robust.robust_scores_log10_p(s)[1] <= -2.0
    assert weighted_hits >= 15
    assert weighted_hits > plain_hits
