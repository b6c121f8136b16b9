"""Test-only windows on the kernels' building blocks: a Triton kernel that returns raw PRF
words (pinned to ``detector.core.prf`` by the tests), the spec's literal word-to-uniform map, and
the int64 key tensors the launchers take."""

from __future__ import annotations

import torch

from detector.core.config import key_int64
from kernels.philox import philox_candidates, philox_context_state, split_key
from kernels.utils import UINT32_MASK, tl, triton


def keys_tensor(
    keys: list[int] | tuple[int, ...], device: torch.device | str = "cpu"
) -> torch.Tensor:
    """The int64 key tensor the launchers take, from Python ints in [0, 2**64)."""
    return torch.tensor([key_int64(k) for k in keys], dtype=torch.int64, device=device)


def uniform_by_division(words: torch.Tensor) -> torch.Tensor:
    """The spec's literal map (float64 division, rounded to float32)."""
    m = (words & UINT32_MASK) >> 8
    return ((m.to(torch.float64) + 1.0) / float(2**24 + 1)).to(torch.float32)


@triton.jit
def _prf_words_kernel(keys_ptr, ctx_ptr, tok_ptr, out_ptr, n, W: tl.constexpr, BLOCK: tl.constexpr):
    """PRF word of (key, context, token) triples, one lane each (a window on the
    Triton PRF: exact words against ``detector.core.prf``)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    k0, k1 = split_key(tl.load(keys_ptr + offs, mask=valid, other=0))
    # Lanes past n load no context (pad = W masks every slot): their rows do not exist.
    pad = tl.where(valid, 0, W)
    s0, s1, s2, s3 = philox_context_state(ctx_ptr + offs.to(tl.int64) * W, pad, k0, k1, W)
    t = tl.load(tok_ptr + offs, mask=valid, other=0).to(tl.uint32)
    w0, w1, w2, w3 = philox_candidates(t >> 2, s0, s1, s2, s3, k0, k1)
    lane = t & 3
    word = tl.where(lane == 0, w0, tl.where(lane == 1, w1, tl.where(lane == 2, w2, w3)))
    tl.store(out_ptr + offs, word.to(tl.int64), mask=valid)


def prf_words_kernel(
    keys: torch.Tensor, contexts: torch.Tensor, token_ids: torch.Tensor
) -> torch.Tensor:
    """Launch ``_prf_words_kernel`` (CUDA tensors, or CPU under TRITON_INTERPRET=1)."""
    n, w = contexts.shape
    out = torch.empty(n, dtype=torch.int64, device=contexts.device)
    block = 128
    _prf_words_kernel[(triton.cdiv(n, block),)](
        keys.contiguous(),
        contexts.to(torch.int64).contiguous(),
        token_ids.to(torch.int64).contiguous(),
        out,
        n,
        W=w,
        BLOCK=block,
    )
    return out
