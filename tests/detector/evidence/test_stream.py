"""The anytime-valid e-process (detector/evidence/stream.py): closed form, validity, persistence,
power."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import special

from detector.core.config import KeyConfig
from detector.evidence.stream import EvidenceStream, log_e_dual, log_e_gumbel
from tests.detector.toy import keyed_sample, toy_logits

THRESHOLD = 0.01
STREAM_TOKENS = 2000


@pytest.mark.parametrize(
    ("n", "total"), [(0, 0.0), (1, 0.5), (10, 12.0), (100, 80.0), (50, 3.0), (2000, 2400.0)]
)
def test_the_closed_form_is_the_uniform_mixture_over_lambda(n, total):
    integral = mpmath.quad(lambda lam: lam**n * mpmath.e ** ((1 - lam) * total), [0, 1])
    assert float(log_e_gumbel(n, total)) == pytest.approx(float(mpmath.log(integral)), rel=1e-9)


def test_the_closed_form_stays_finite_where_the_incomplete_gamma_underflows():
    value = float(log_e_gumbel(100_000, 10_000.0))
    assert math.isfinite(value) and value < 0


@pytest.mark.parametrize("alpha", [0.1, 0.3, 0.5])
def test_the_dual_key_e_value_of_one_token_has_mean_one_under_the_null(alpha):
    """Integrate against the density of (1 - a) X + a Y, X and Y Exp(1) (hypoexponential)."""

    def density(x):
        if alpha == 0.5:
            return 4 * x * mpmath.e ** (-2 * x)
        b, c = 1 - alpha, alpha
        return (mpmath.e ** (-x / b) - mpmath.e ** (-x / c)) / (b - c)

    def e_value(x):
        return mpmath.e ** float(log_e_dual(1, float(x), alpha))

    mean = mpmath.quad(lambda x: density(x) * e_value(x), [0, 1, 10, 100, mpmath.inf])
    assert float(mean) == pytest.approx(1.0, rel=1e-6)


def test_appending_one_token_at_a_time_equals_one_batch():
    ids = np.random.default_rng(2).integers(0, 49152, 300)
    one = EvidenceStream([42, KeyConfig(key=43, context_width=2)])
    for token in ids:
        state = one.extend([token])
    batch = EvidenceStream([42, KeyConfig(key=43, context_width=2)]).extend(ids)
    assert state.num_tokens == batch.num_tokens == 300
    assert [k.num_scored_tokens for k in state.keys] == [k.num_scored_tokens for k in batch.keys]
    assert [k.score for k in state.keys] == pytest.approx([k.score for k in batch.keys], rel=1e-12)
    assert state.log10_e_value == pytest.approx(batch.log10_e_value, rel=1e-9)
    assert state.log10_p_anytime == pytest.approx(batch.log10_p_anytime, rel=1e-9)


def test_a_dual_key_stream_one_token_at_a_time_equals_one_batch():
    ids = np.random.default_rng(6).integers(0, 49152, 120)
    config = KeyConfig(key=99, algorithm="dual_key_gumbel", alpha=0.3)
    one = EvidenceStream(config)
    for token in ids:
        state = one.extend([token])
    batch = EvidenceStream(config).extend(ids)
    assert state.keys[0].score == pytest.approx(batch.keys[0].score, rel=1e-12)
    assert state.log10_e_value == pytest.approx(batch.log10_e_value, rel=1e-9)


def test_the_scalar_prf_equals_the_vectorized_one():
    from detector.core import prf

    rng = np.random.default_rng(7)
    for width in (1, 4, 5, 9):
        contexts = rng.integers(-1, 2**32, (100, width))
        tokens = rng.integers(0, 2**32, 100)
        key = int(rng.integers(0, 2**63)) * 2 + 1
        words = [
            prf.word(key, tuple(map(int, c)), int(t)) for c, t in zip(contexts, tokens, strict=True)
        ]
        assert np.array_equal(prf.uint32(key, contexts, tokens), np.array(words, np.uint32))
    assert prf.word(42, (1, 2, 3, 4), 7) == 425429266  # the spec's test vector


def test_every_key_scores_every_new_context():
    ids = np.random.default_rng(3).integers(0, 49152, 200)
    state = EvidenceStream([42, 43, 44]).extend(ids)
    assert [k.num_scored_tokens for k in state.keys] == [200, 200, 200]


def test_a_repeated_context_is_scored_once():
    state = EvidenceStream(42).extend([5, 6, 7, 8, 9] * 20)
    assert state.num_tokens == 100
    assert state.num_scored_tokens == 9  # 4 padded start contexts + 5 cyclic ones


def test_a_persisted_stream_continues_exactly_and_holds_no_key_value():
    key = 0xDEADBEEF12345678
    ids = np.random.default_rng(4).integers(0, 49152, 400)
    whole = EvidenceStream(key)
    whole.extend(ids[:250])
    blob = whole.to_bytes()
    assert str(key).encode() not in blob and key.to_bytes(8, "big") not in blob
    assert key.to_bytes(8, "little") not in blob
    resumed = EvidenceStream.from_bytes(blob, key)
    assert resumed.extend(ids[250:]) == whole.extend(ids[250:])


def test_it_rejects_a_bad_threshold_and_an_empty_key_list():
    with pytest.raises(ValueError, match="threshold"):
        EvidenceStream(42, threshold=1.5)
    with pytest.raises(ValueError, match="at least one key"):
        EvidenceStream([])


def test_the_repr_shows_no_key_value():
    assert "4242424242" not in repr(EvidenceStream(4242424242))


@pytest.fixture(scope="module")
def human_token_ids():
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer

    return load_tokenizer("default").encode(english_prose(1_000_000))


def _running_gamma_log10_p(ids: np.ndarray, key: int) -> np.ndarray:
    """The fixed-length test re-run after every token (the invalid way)."""
    from detector.evidence.detection import detect_ids

    d = detect_ids(ids, key)
    n = np.cumsum(d.scored_mask)
    total = np.cumsum(d.token_scores)
    with np.errstate(divide="ignore"):
        return np.log10(np.where(n > 0, special.gammaincc(np.maximum(n, 1), total), 1.0))


def test_human_streams_checked_after_every_token_are_flagged_at_most_at_the_threshold_rate(
    human_token_ids,
):
    """1,000 streams of 2,000 tokens (125 disjoint stretches of prose x 8 random keys)."""
    rng = np.random.default_rng(5)
    streams = [
        (human_token_ids[i : i + STREAM_TOKENS], int(k))
        for i in range(0, len(human_token_ids) - STREAM_TOKENS + 1, STREAM_TOKENS)
        for k in rng.integers(0, 2**63, 8)
    ][:1000]
    assert len(streams) == 1000
    flagged = sum(
        EvidenceStream(key, threshold=THRESHOLD).extend(ids).is_watermarked for ids, key in streams
    )
    naive = sum(
        bool((_running_gamma_log10_p(ids, key) <= math.log10(THRESHOLD)).any())
        for ids, key in streams
    )
    print(f"\nflagged human streams: e-process {flagged}/1000, repeated Gamma test {naive}/1000")
    assert flagged <= THRESHOLD * len(streams)
    assert naive > 3 * THRESHOLD * len(streams)  # the problem the e-process solves


def test_watermarked_streams_are_flagged_within_a_bounded_delay():
    """Low-entropy toy text (about 17 tokens for the fixed-length test). The fixed-length
    figure is the first length at which the Gamma test would reject: optimistic, since a
    fixed-length test must choose its length in advance."""
    key = 0x5EED
    delays, fixed = [], []
    for seed in range(20):
        logits = toy_logits(np.random.default_rng(seed), vocab=500, steps=400, temperature=0.2)
        ids = keyed_sample(key, logits, seed=seed)
        stream = EvidenceStream(key, threshold=THRESHOLD)
        first = next((i + 1 for i, t in enumerate(ids) if stream.extend([t]).is_watermarked), None)
        below = np.flatnonzero(_running_gamma_log10_p(ids, key) <= math.log10(THRESHOLD))
        assert first is not None and below.size
        delays.append(first)
        fixed.append(int(below[0]) + 1)
    ratio = np.median(delays) / np.median(fixed)
    print(f"\nmedian tokens to flag: e-process {np.median(delays)}, fixed {np.median(fixed)}")
    assert ratio <= 4.0
