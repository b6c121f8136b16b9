"""Batch scoring of ragged documents: equal to ``detector``'s per-document scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from detector.core import prf as reference_prf
from detector.core.contexts import build_contexts
from kernels.score_tokens import score_tokens, score_tokens_reference
from tests.kernels.conftest import requires_cuda
from tests.kernels.prf_words import keys_tensor

KEYS = [42, 2**63 + 3, 2**64 - 1, 7]


def docs(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    lengths = [5, 0, 1, 300, 37]  # an empty and a one-token document among them
    cu = torch.tensor([0, *np.cumsum(lengths)], dtype=torch.int64)
    tokens = torch.randint(0, 49152, (int(cu[-1]),), generator=gen)
    tokens[100:140] = tokens[60:100]  # repeats: every position is still scored
    keys = keys_tensor([KEYS[i % len(KEYS)] for i in range(len(lengths))])
    return tokens, cu, keys


def detector_scores(tokens: np.ndarray, key: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(uniforms, scores) of one document as ``detector`` computes them."""
    u = reference_prf.uniform(reference_prf.uint32(key, build_contexts(tokens, width), tokens))
    return u, -np.log1p(-u.astype(np.float64))


@pytest.mark.parametrize("width", [1, 4, 5])
def test_scores_equal_detector_scores_per_document(width: int, gen) -> None:
    tokens, cu, keys = docs(gen)
    got = score_tokens(tokens, cu, keys, context_width=width).numpy()
    for d in range(len(cu) - 1):
        lo, hi = int(cu[d]), int(cu[d + 1])
        u, want = detector_scores(tokens[lo:hi].numpy(), KEYS[d % len(KEYS)], width)
        # Same float32 uniform exactly: -log(1 - u) recovers it bit for bit ...
        assert np.array_equal((-np.expm1(-got[lo:hi])).astype(np.float32), u)
        # ... and numpy's log1p and torch's differ at most in the last float64 bit.
        np.testing.assert_allclose(got[lo:hi], want, rtol=4e-16, atol=0)


def test_dual_key_scores_weight_the_two_derived_keys(gen) -> None:
    tokens, cu, keys = docs(gen)
    got = score_tokens(tokens, cu, keys, algorithm="dual_key_gumbel", alpha=0.3).numpy()
    for d in range(len(cu) - 1):
        lo, hi = int(cu[d]), int(cu[d + 1])
        master = KEYS[d % len(KEYS)]
        _, s_a = detector_scores(
            tokens[lo:hi].numpy(), reference_prf.derive_key(master, b"key_a"), 4
        )
        _, s_b = detector_scores(
            tokens[lo:hi].numpy(), reference_prf.derive_key(master, b"key_b"), 4
        )
        np.testing.assert_allclose(got[lo:hi], 0.7 * s_a + 0.3 * s_b, rtol=1e-15, atol=0)


def test_it_rejects_malformed_inputs(gen) -> None:
    tokens, cu, keys = docs(gen)
    bad = [
        dict(token_ids=tokens.int()),
        dict(cu_seqlens=cu[1:]),
        dict(cu_seqlens=cu.flip(0)),
        dict(keys=keys[:2]),
        dict(context_width=0),
        dict(algorithm="kgw"),
        dict(alpha=1.5),
    ]
    for change in bad:
        args = dict(token_ids=tokens, cu_seqlens=cu, keys=keys) | change
        with pytest.raises(ValueError):
            score_tokens(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize("algorithm", ["gumbel", "dual_key_gumbel"])
@pytest.mark.parametrize("width", [1, 4, 5])
def test_kernel_equals_reference(interpret, algorithm: str, width: int, gen) -> None:
    tokens, cu, keys = docs(gen)
    opts = dict(context_width=width, algorithm=algorithm, alpha=0.1)  # not a float32 value
    got = interpret(
        "kernels.score_tokens", "score_tokens", tokens, cu, keys, backend="triton", **opts
    )
    want = score_tokens_reference(tokens, cu, keys, **opts)  # type: ignore[arg-type]
    torch.testing.assert_close(got, want, rtol=4e-16, atol=0)


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("algorithm", ["gumbel", "dual_key_gumbel"])
def test_gpu_kernel_equals_reference(algorithm: str, gen) -> None:
    tokens, cu, keys = docs(gen)
    want = score_tokens_reference(tokens, cu, keys, algorithm=algorithm)
    got = score_tokens(tokens.cuda(), cu.cuda(), keys.cuda(), algorithm=algorithm).cpu()
    torch.testing.assert_close(got, want, rtol=4e-16, atol=0)
