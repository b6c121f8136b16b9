"""The detector's CUDA path (``kernels.score_tokens``) gives the numpy path's results."""

from __future__ import annotations

import numpy as np
import pytest

from detector.core import scoring
from detector.core.config import KeyConfig
from detector.evidence.detection import Document, detect_batch

CONFIGS = [
    KeyConfig(key=42),
    KeyConfig(key=2**64 - 5, context_width=3),
    KeyConfig(key=7, algorithm="dual_key_gumbel", alpha=0.25),
    KeyConfig(key=2**63 + 1, deduplicate_contexts="none"),
]


def documents():
    rng = np.random.default_rng(21)
    docs = [rng.integers(0, 49152, size=n) for n in (0, 1, 5, 300, 1000)]
    docs.append(np.tile(rng.integers(0, 100, size=20), 10))  # repeats: the mask matters
    return docs


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
