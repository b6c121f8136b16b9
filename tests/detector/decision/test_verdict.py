"""The three-way verdict on short, long and low-entropy texts (one hypothesis's family verdict,
``detector.decision.family``, over ``detector.evidence`` detections and their power)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from detector.decision.family import FamilyVerdict, family_verdict
from detector.decision.text import detect_text
from detector.evidence import power
from detector.evidence.detection import detect_ids
from tests.detector.planted import human_ids, watermark_ids
from tests.detector.toy import keyed_sample

KEY = 0x1234_5678_9ABC_DEF0


def _verdict(ids, key, **kwargs) -> FamilyVerdict:
    """The verdict of one key on ``ids`` alone (no span scan)."""
    return family_verdict([detect_ids(ids, key, **kwargs)])


def test_a_short_human_text_is_inconclusive_with_the_reason_in_words():
    d = _verdict(human_ids()[:40], KEY)
    n = d.hypotheses[0].detection.num_scored_tokens
    assert not d.is_watermarked and d.verdict == "inconclusive"
    assert f"only {n} tokens could be scored" in d.verdict_reason
    assert f"about {power.DEFAULT_TOKENS_NEEDED} are needed" in d.verdict_reason
    assert "verdict" not in d.hypotheses[0].detection.summary()  # evidence carries no verdict


def test_a_long_human_text_is_not_watermarked():
    d = _verdict(human_ids()[5_000:6_500], KEY)
    assert d.hypotheses[0].detection.num_scored_tokens > power.DEFAULT_TOKENS_NEEDED
    assert d.verdict == "not_watermarked" and not d.is_watermarked
    assert "would have been detected with probability" in d.verdict_reason


def test_a_long_watermarked_text_is_watermarked():
    d = _verdict(watermark_ids(KEY, 400, seed=5), KEY)
    assert d.is_watermarked and d.verdict == "watermarked"
    assert "is at most the threshold 0.01" in d.verdict_reason


def _low_entropy_text(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Keyed sampling from a near-deterministic toy model (top token 0.985-0.999 at every step,
    the next 30 sharing the rest), and each position's expected score of the sampled token."""
    rng = np.random.default_rng(seed)
    vocab = rng.choice(49152, 400, replace=False)
    top = rng.uniform(0.985, 0.999, n)
    probs = np.zeros((n, vocab.size))
    favourite = rng.integers(0, vocab.size, n)
    others = rng.dirichlet(np.ones(30), n) * (1.0 - top)[:, None]
    for i in range(n):
        cols = np.setdiff1d(rng.choice(vocab.size, 31, replace=False), [favourite[i]])[:30]
        probs[i, cols] = others[i]
        probs[i, favourite[i]] = top[i]
    ids = keyed_sample(KEY, np.log(np.maximum(probs, 1e-300)), seed=seed, vocab_ids=vocab)
    return ids, power.position_expected_score(probs)


def test_a_low_entropy_watermarked_text_is_inconclusive_not_clear():
    """400 watermarked tokens a model would have predicted almost surely: the test cannot see
    the watermark, and with the model's expectations the verdict says so instead of clearing
    the text."""
    ids, expected = _low_entropy_text(400, seed=11)
    d = _verdict(ids, KEY, expected_scores=expected)
    assert d.hypotheses[0].detection.num_scored_tokens > 350 and not d.is_watermarked
    assert d.verdict == "inconclusive"
    assert d.power is not None and d.power < 0.3
    assert "model's predictions" in d.verdict_reason
    # The same text without the model: its length alone clears it under a generous curve,
    # which is why the default assumes low-entropy text.
    assert _verdict(ids, KEY, tokens_needed=100).verdict == "not_watermarked"


def test_the_model_basis_clears_a_long_unpredictable_text():
    ids = human_ids()[9_000:9_300]
    expected = np.full(ids.size, 1.8)  # a model that would have spread its choices
    d = _verdict(ids, KEY, expected_scores=expected)
    assert d.verdict == "not_watermarked"
    with pytest.raises(ValueError):
        detect_ids(ids, KEY, expected_scores=expected[:-1])


def test_the_keys_measured_power_curve_decides_when_given():
    ids = human_ids()[2_000:2_150]
    d = _verdict(ids, KEY, tokens_needed=60)
    assert d.verdict == "not_watermarked" and "key's measured power curve" in d.verdict_reason
    d = _verdict(ids, KEY, tokens_needed=1_000)
    assert d.verdict == "inconclusive" and "about 1000 are needed" in d.verdict_reason


def test_text_entry_points_carry_the_family_verdict():
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    text = tok.decode(list(human_ids()[30_000:30_060]))
    r = detect_text(text, tok, [KEY, KEY + 1])
    assert r.verdict == "inconclusive" and r.verdict_reason.startswith("only")
    one = detect_text(text, tok, [KEY])
    assert one.verdict == "inconclusive" and one.verdict_reason == one.family.verdict_reason
    marked = tok.decode(list(watermark_ids(KEY, 300, seed=2)))
    assert detect_text(marked, tok, [KEY, KEY + 1]).verdict == "watermarked"
    assert detect_text(marked, tok, [KEY]).verdict == "watermarked"


def test_the_default_is_the_documented_low_entropy_figure():
    e = power.mean_score_for(power.DEFAULT_TOKENS_NEEDED)
    assert power.constant_power(power.DEFAULT_TOKENS_NEEDED, e, -2.0) == pytest.approx(0.8)
    assert special.digamma(1.0 + power.inverse_probability(e)) > 0  # a valid token model
