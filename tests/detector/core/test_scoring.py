"""The detector's CPU paths (numpy, and the compiled PRF of long inputs) give the same scores
bit for bit, and its CUDA path (``kernels.score_tokens``) gives theirs."""

from __future__ import annotations

import numpy as np
import pytest

from detector.core import compiled, prf, scoring
from detector.core.config import KeyConfig
from detector.core.contexts import COMPILED_FROM, build_contexts
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


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("high", [49152, 2**32])
def test_the_compiled_prf_gives_numpys_uniforms_bit_for_bit(width, high):
    rng = np.random.default_rng(width)
    ids = rng.integers(0, high, size=COMPILED_FROM + 3000)
    contexts = build_contexts(ids, width)
    mask = rng.random(ids.shape[0]) < 0.6
    for key in (0, 42, 2**63 + 12345, 2**64 - 1):
        want = prf.uniform(prf.uint32(key, contexts[mask], ids[mask]))
        got = compiled.uniforms(key, contexts, ids, mask)
        assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))
        whole = prf.uniform(prf.uint32(key, contexts, ids))
        assert np.array_equal(compiled.uniforms(key, contexts, ids, np.ones_like(mask)), whole)


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
        assert (a.num_scored_tokens, a.is_watermarked) == (b.num_scored_tokens, b.is_watermarked)
        assert b.log10_p == pytest.approx(a.log10_p, rel=1e-9, abs=1e-12)


def test_the_batched_kernel_path_matches_numpy_through_the_torch_reference(monkeypatch):
    assert_same(*run_both(monkeypatch, "cpu", "torch"))


@pytest.mark.gpu
def test_the_batched_kernel_path_matches_numpy_on_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    assert_same(*run_both(monkeypatch, "cuda", "auto"))
