"""The detector's CPU paths (numpy, and the compiled PRF of long inputs) give the same scores
bit for bit, and its CUDA path (``kernels.score_tokens``) gives theirs."""

from __future__ import annotations

import numpy as np
import pytest

from detector.core import scoring
from detector.core.config import KeyConfig
from detector.core.contexts import COMPILED_FROM, build_contexts
from detector.decision.family import flagged
from detector.evidence.detection import Document, detect_batch

CONFIGS = [
    KeyConfig(key=42),
    KeyConfig(key=2**64 - 5, context_width=3),
    KeyConfig(key=7, algorithm="dual_key_gumbel", alpha=0.25),
    KeyConfig(key=2**63 + 1, deduplicate_contexts="none"),
]


def documents():
    rng = np.random.default_rng(21)
    docs = [rng.integers(0, 49152, size=n) for n in (0, 1, 5, 300, 1000, 5000)]  # 5000: compiled
    docs.append(np.tile(rng.integers(0, 100, size=20), 10))  # repeats: the mask matters
    docs.append(np.tile(rng.integers(0, 100, size=300), 10))
    return docs


@pytest.mark.parametrize("config", CONFIGS)
def test_long_and_short_inputs_score_alike(config):
    """``token_scores`` of a long input (compiled) and of its rows scored in short pieces
    (numpy) are equal floats, with and without a mask."""
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 49152, size=3 * COMPILED_FROM)
    contexts = build_contexts(ids, config.context_width)
    mask = rng.random(ids.shape[0]) < 0.5
    pieces = range(0, ids.shape[0], COMPILED_FROM // 2)
    step = COMPILED_FROM // 2
    short = np.concatenate(
        [scoring.config_scores(config, contexts[a : a + step], ids[a : a + step]) for a in pieces]
    )
    assert np.array_equal(scoring.config_scores(config, contexts, ids), short)
    assert np.array_equal(scoring.config_scores(config, contexts, ids, mask), short[mask])
    with pytest.raises(ValueError):
        scoring.token_scores(2**64, contexts, ids)


def run_both(monkeypatch, device: str, backend: str):
    docs = documents()
    # Each document under one or two configurations: shared contexts on both paths.
    batch = [Document(d, CONFIGS[i % 4 : i % 4 + 1 + i % 2]) for i, d in enumerate(docs)]
    cpu = [d for found in detect_batch(batch) for d in found]
    original = scoring.kernel_scores

    def on_device(*args, **kwargs):
        return original(*args, **kwargs, device=device, backend=backend)

    monkeypatch.setattr(scoring, "cuda_available", lambda: True)
    monkeypatch.setattr(scoring, "kernel_scores", on_device)
    return cpu, [d for found in detect_batch(batch) for d in found]


def assert_same(cpu, dev):
    for a, b in zip(cpu, dev, strict=True):
        assert np.array_equal(a.scored_mask, b.scored_mask)
        np.testing.assert_allclose(b.token_scores, a.token_scores, rtol=1e-12, atol=0)
        assert (a.num_scored_tokens, flagged(a)) == (b.num_scored_tokens, flagged(b))
        assert b.log10_p == pytest.approx(a.log10_p, rel=1e-9, abs=1e-12)


def test_the_batched_kernel_path_matches_numpy_through_the_torch_reference(monkeypatch):
    assert_same(*run_both(monkeypatch, "cpu", "torch"))


@pytest.mark.gpu
def test_the_batched_kernel_path_matches_numpy_on_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    assert_same(*run_both(monkeypatch, "cuda", "auto"))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("n", [COMPILED_FROM - 1, 3 * COMPILED_FROM])
def test_spread_scores_are_the_masked_scores_at_their_positions(config, n):
    """``spread_scores`` (long inputs: the PRF from the ids, the scores in place) holds the
    masked ``config_scores`` where the mask holds and +0.0 elsewhere, bit for bit."""
    rng = np.random.default_rng(n)
    ids = rng.integers(0, 49152, size=n)
    mask = rng.random(n) < 0.6
    got = scoring.spread_scores(config, ids, mask)
    want = scoring.config_scores(config, build_contexts(ids, config.context_width), ids, mask)
    assert np.array_equal(got[mask].view(np.uint64), want.view(np.uint64))
    assert not np.signbit(got[~mask]).any() and not got[~mask].any()
