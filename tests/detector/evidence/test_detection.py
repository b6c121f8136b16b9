from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from detector.core import prf
from detector.core.config import KeyConfig
from detector.decision.family import flagged
from detector.evidence.detection import (
    Document,
    detect_batch,
    detect_config,
    detect_ids,
)
from tests.detector.toy import keyed_sample, toy_logits

KEY = 0xC0FFEE_1234_5678


@pytest.fixture(scope="module")
def watermarked():
    rng = np.random.default_rng(5)
    return keyed_sample(KEY, toy_logits(rng, vocab=500, steps=200))


def test_a_keyed_sample_is_detected_with_its_key(watermarked):
    det = detect_ids(watermarked, KEY)
    assert flagged(det)
    assert det.p_value < 1e-10 and det.log10_p < -10
    assert det.num_tokens == 200 and det.num_scored_tokens == int(det.scored_mask.sum())


def test_a_keyed_sample_is_not_detected_with_another_key(watermarked):
    det = detect_ids(watermarked, KEY + 1)
    assert not flagged(det)
    assert det.p_value > 1e-3


def test_scores_of_random_keys_on_random_text_are_exponential():
    rng = np.random.default_rng(8)
    tokens = rng.integers(0, 49152, size=4000)
    scores = np.concatenate(
        [detect_ids(tokens, int(k)).token_scores for k in rng.integers(0, 2**63, size=5)]
    )
    assert stats.kstest(scores, "expon").pvalue > 1e-3


def test_p_values_of_random_keys_are_uniform():
    rng = np.random.default_rng(9)
    tokens = rng.integers(0, 49152, size=60)
    ps = [detect_ids(tokens, int(k)).p_value for k in rng.integers(0, 2**63, size=1500)]
    assert stats.kstest(ps, "uniform").pvalue > 1e-3


def test_repeated_contexts_are_skipped_and_not_scored():
    tokens = list(range(10, 40)) * 4
    det = detect_ids(tokens, KEY)
    assert det.num_scored_tokens == 34
    assert (det.token_scores[~det.scored_mask] == 0).all()
    assert det.score == pytest.approx(det.token_scores.sum())
    plain = detect_ids(tokens, KEY, deduplicate=False)
    assert plain.num_scored_tokens == 120


def test_token_scores_are_minus_log_one_minus_u_of_the_prf():
    tokens = np.array([5, 9, 2, 7, 1])
    det = detect_ids(tokens, 42, context_width=2)
    contexts = np.array([[-1, -1], [-1, 5], [5, 9], [9, 2], [2, 7]])
    u = prf.uniform(prf.uint32(42, contexts, tokens)).astype(np.float64)
    assert np.array_equal(det.token_scores, -np.log1p(-u))


def test_dual_key_detection_finds_text_sampled_under_either_derived_key():
    rng = np.random.default_rng(6)
    logits = toy_logits(rng, vocab=400, steps=240)
    key_a = prf.derive_key(KEY, b"key_a")
    key_b = prf.derive_key(KEY, b"key_b")
    route_b = rng.random(240) < 0.1  # upstream routes each token to key B with probability alpha
    tokens = _route(logits, route_b, key_a, key_b)
    det = detect_ids(tokens, KEY, algorithm="dual_key_gumbel", alpha=0.1)
    assert flagged(det) and det.log10_p < -10
    assert not flagged(detect_ids(tokens, KEY + 7, algorithm="dual_key_gumbel"))


def _route(logits, route_b, key_a, key_b):
    """Sample token by token, each under the key its route picks (contexts follow the text)."""
    out: list[int] = []
    for step in range(logits.shape[0]):
        key = key_b if route_b[step] else key_a
        ctx = np.array(([-1] * 4 + out)[-4:])
        u = prf.uniform(
            prf.uint32(key, np.tile(ctx, (logits.shape[1], 1)), np.arange(logits.shape[1]))
        )
        out.append(int(np.argmax(logits[step] - np.log(-np.log(u.astype(np.float32))))))
    return np.array(out)


def test_empty_input_gives_p_one_and_no_verdict():
    det = detect_ids([], KEY)
    assert (det.p_value, det.num_scored_tokens, flagged(det)) == (1.0, 0, False)
    assert "is_watermarked" not in det.summary()  # evidence carries no verdict


def test_hypotheses_of_one_document_share_its_contexts_and_keep_their_order():
    rng = np.random.default_rng(3)
    tokens = np.tile(rng.integers(0, 1000, size=30), 3)
    configs = [
        KeyConfig(key=KEY),
        KeyConfig(key=KEY + 1),
        KeyConfig(key=KEY, context_width=2),
        KeyConfig(key=KEY, deduplicate_contexts="none"),
    ]
    doc = Document(tokens, configs)
    found = detect_batch([doc, Document(tokens.copy(), configs[:1])])
    assert [len(f) for f in found] == [4, 1]
    for got, config in zip(found[0], configs, strict=True):  # as if tested one by one
        alone = detect_config(tokens, config)
        assert got.summary() == alone.summary()
        assert np.array_equal(got.token_scores, alone.token_scores)
        assert np.array_equal(got.scored_mask, alone.scored_mask)
    # One mask per (width, de-duplication) within a document; none across documents.
    assert found[0][0].scored_mask is found[0][1].scored_mask
    assert found[0][0].scored_mask is not found[0][2].scored_mask
    assert found[0][0].scored_mask is not found[1][0].scored_mask
    assert found[0][3].num_scored_tokens == 90 > found[0][0].num_scored_tokens


@pytest.mark.parametrize(
    "bad",
    [
        dict(algorithm="kgw"),
        dict(context_width=0),
        dict(alpha=2.0),
        dict(threshold=0.0),
    ],
)
def test_it_rejects_bad_configurations(bad):
    with pytest.raises(ValueError):
        detect_ids([1, 2, 3], KEY, **bad)


def test_key_configs_never_show_their_key():
    config = KeyConfig(key=KEY, name="team-a")
    assert str(KEY) not in repr(config) and hex(KEY)[2:] not in repr(config).lower()
    assert detect_config([1, 2, 3], config).num_tokens == 3


def test_vllm_shaped_configurations_are_accepted():
    config = KeyConfig.from_vllm(
        {
            "algorithm": "dual_key_gumbel",
            "key": 42,
            "context_width": 3,
            "alpha": 0.2,
            "deduplicate_contexts": "none",
        }
    )
    assert (config.algorithm, config.context_width, config.alpha, config.deduplicate) == (
        "dual_key_gumbel",
        3,
        0.2,
        False,
    )


def _reference_paths(monkeypatch):
    """Send every text down the numpy reference paths (sorts, binary search), as short ones."""
    from detector.core import contexts
    from detector.evidence import detection
    from detector.text import ngrams

    for module in (contexts, detection, ngrams):
        monkeypatch.setattr(module, "COMPILED_FROM", 2**62)


def _same_detection(a, b):
    for name in (
        "score",
        "p_value",
        "log10_p",
        "num_tokens",
        "num_scored_tokens",
        "num_common_tokens",
        "vllm_score",
        "vllm_p_value",
        "vllm_log10_p",
        "vllm_num_scored_tokens",
    ):
        assert getattr(a, name) == getattr(b, name), name
    assert np.array_equal(a.scored_mask, b.scored_mask)
    assert np.array_equal(a.token_scores, b.token_scores)  # bit for bit: == on every float


def test_the_compiled_masks_give_the_reference_detection_bit_for_bit(monkeypatch):
    """Long texts take the compiled passes (detector.core.compiled); the numpy reference gives
    the very same masks, scores, p-values and verdicts, on human prose with a watermarked
    passage inside and on random ids, under bounded and unbounded histories, with and without
    the n-gram table, and for a width the table does not apply to."""
    from benchmarks.corpus import english_prose
    from detector.core.contexts import COMPILED_FROM
    from detector.decision.family import localize_family
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    human = tok.encode(english_prose()[:120_000])
    rng = np.random.default_rng(17)
    marked = keyed_sample(KEY, toy_logits(rng, vocab=500, steps=1500))
    mixed = np.concatenate([human[:6_000], marked, human[6_000:12_000]])
    texts = [mixed, rng.integers(0, 49152, 9_000), np.tile(rng.integers(0, 300, 40), 100)]
    configs = [
        KeyConfig(KEY),  # upstream's bounded history
        KeyConfig(KEY, deduplicate_contexts_max_history=None),
        KeyConfig(KEY, algorithm="dual_key_gumbel", alpha=0.3, context_width=3),
        KeyConfig(KEY, deduplicate_contexts="none"),
    ]
    docs = [Document(ids, configs, ngrams=tok.ngram_table) for ids in texts]
    docs += [Document(ids, configs) for ids in texts]
    assert all(ids.shape[0] >= COMPILED_FROM for ids in texts)
    fast = detect_batch(docs)
    with monkeypatch.context() as m:
        _reference_paths(m)
        slow = detect_batch(docs)
    for fast_doc, slow_doc in zip(fast, slow, strict=True):
        for a, b in zip(fast_doc, slow_doc, strict=True):
            _same_detection(a, b)
    assert flagged(fast[0][0]) and fast[0][0].num_common_tokens > 0
    assert not flagged(fast[1][0])
    fast_locs = localize_family(fast[0], configs)[1]
    slow_locs = localize_family(slow[0], configs)[1]
    assert fast_locs[0].spans  # the watermarked passage is found
    assert [loc.spans for loc in fast_locs] == [loc.spans for loc in slow_locs]


def test_detect_text_and_its_spans_are_the_same_on_either_path(monkeypatch):
    from benchmarks.corpus import english_prose
    from detector.decision.family import localize_family
    from detector.decision.text import detect_text
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    text = english_prose()[200_000:260_000]
    configs = [KeyConfig(KEY), KeyConfig(7)]
    ids = tok.encode(text)

    def run():
        found = detect_text(text, tok, configs)
        detections = detect_batch([Document(ids, configs, ngrams=tok.ngram_table)])[0]
        return found, detections, localize_family(detections, configs)

    fast, fast_detections, (fast_verdict, fast_locs) = run()
    with monkeypatch.context() as m:
        _reference_paths(m)
        slow, slow_detections, (slow_verdict, slow_locs) = run()
    assert (fast.verdict, fast.p_value, fast.log10_p) == (slow.verdict, slow.p_value, slow.log10_p)
    for a, b in zip(fast_detections, slow_detections, strict=True):
        _same_detection(a, b)
    assert (fast_verdict.p_value, fast_verdict.verdict) == (
        slow_verdict.p_value,
        slow_verdict.verdict,
    )
    for a, b in zip(fast_locs, slow_locs, strict=True):
        assert (a.log10_p, a.scan_log10_p, a.spans) == (b.log10_p, b.scan_log10_p, b.spans)
