"""The watermark PRF (``philox4x32-10-v1``) in torch and as Triton device functions.

Second copy of the PRF (the first is numpy, ``detector/core/prf.py``); tests pin both to each
other and to upstream. Spec: ``../shared/spec/gumbel-watermark.md`` section 1.

Torch side: uint32 words live in int64 tensors. A 32x32-bit product fits the 64-bit lane
modulo 2**64 (int64 multiplication wraps in two's complement on CPU and CUDA), so
``lo = p & 0xFFFFFFFF`` and ``hi = (p >> 32) & 0xFFFFFFFF`` need no 16-bit splitting.
Triton side: ``tl.philox_impl`` is Random123's Philox4x32-10 on uint32 lanes.
Numba side (CPU): ``philox_rounds`` on uint32 scalars, shared by the CPU context states
(``context_state`` on CPU tensors) and the CPU keyed draw (``kernels.cpu_scan``).
"""

from __future__ import annotations

import numpy as np
import torch

from kernels.utils import UINT32_MASK, njit_cached, tl, triton

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
CONTEXT_TAG = 0x574D4358  # "WMCX": first word of the context state
TOKEN_TAG = 0x574D544B  # "WMTK": mixed into k1 for the candidate-token call
Words = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def key_words(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split int64 key patterns ``[...]`` into (k0, k1) uint32 words held in int64."""
    return keys & UINT32_MASK, (keys >> 32) & UINT32_MASK


def philox4x32_10(c: Words, k0: torch.Tensor | int, k1: torch.Tensor | int) -> Words:
    """Random123 Philox4x32-10; counters and keys broadcast together (uint32 values in int64).

    In-place on six buffers (about 2x faster than fresh tensors per op on a [8, 12288] batch
    here). The low product halves stay unmasked inside the rounds: they only meet XORs whose
    result is masked before the next multiply, so their upper bits never matter.
    """
    shape = torch.broadcast_shapes(*(t.shape for t in c))
    c0, c1, c2, c3 = (t.expand(shape).clone() for t in c)
    p0, p1, tmp = torch.empty_like(c0), torch.empty_like(c0), torch.empty_like(c0)
    for r in range(10):
        torch.mul(c0, PHILOX_M0, out=p0)  # exact modulo 2**64
        torch.mul(c2, PHILOX_M1, out=p1)
        c1.bitwise_xor_(torch.bitwise_right_shift(p1, 32, out=tmp)).bitwise_xor_(k0)
        c1.bitwise_and_(UINT32_MASK)  # new c0 = hi(M1*c2) ^ c1 ^ k0
        c3.bitwise_xor_(torch.bitwise_right_shift(p0, 32, out=tmp)).bitwise_xor_(k1)
        c3.bitwise_and_(UINT32_MASK)  # new c2 = hi(M0*c0) ^ c3 ^ k1
        # new (c0, c1, c2, c3) = (c1, lo(M1*c2), c3, lo(M0*c0)); old c0, c2 become scratch.
        c0, c1, c2, c3, p0, p1 = c1, p1, c3, p0, c0, c2
        if r < 9:
            k0 = (k0 + PHILOX_W0) & UINT32_MASK
            k1 = (k1 + PHILOX_W1) & UINT32_MASK
    return c0, c1.bitwise_and_(UINT32_MASK), c2, c3.bitwise_and_(UINT32_MASK)


_M0, _M1 = np.uint64(PHILOX_M0), np.uint64(PHILOX_M1)
_W0, _W1 = np.uint64(PHILOX_W0), np.uint64(PHILOX_W1)
_MASK, _32 = np.uint64(UINT32_MASK), np.uint64(32)


@njit_cached(inline="always")
def philox_rounds(c0, c1, c2, c3, k0, k1):  # type: ignore[no-untyped-def]
    """Philox4x32-10 on uint32 scalars, compiled (Numba): 32x32 -> 64-bit products, which LLVM
    vectorizes as unsigned 32-bit multiplies when the caller loops over counters."""
    for _ in range(10):
        p0 = np.uint64(c0) * _M0
        p1 = np.uint64(c2) * _M1
        c0, c1, c2, c3 = (
            np.uint32((p1 >> _32) ^ c1 ^ k0),
            np.uint32(p1 & _MASK),
            np.uint32((p0 >> _32) ^ c3 ^ k1),
            np.uint32(p0 & _MASK),
        )
        k0 = np.uint32((k0 + _W0) & _MASK)  # the last bump is never used: harmless
        k1 = np.uint32((k1 + _W1) & _MASK)
    return c0, c1, c2, c3


@njit_cached()
def context_states_cpu(keys, contexts):  # type: ignore[no-untyped-def]
    """:func:`context_state` as int64 ``[n, 4]`` for int64 key patterns ``keys`` ``[n]`` and
    int64 contexts ``[n, w]`` (numpy; -1 padded, ids taken mod 2**32): one compiled call."""
    n, w = contexts.shape
    out = np.empty((n, 4), np.int64)
    for r in range(n):
        key = np.uint64(keys[r])
        k0, k1 = np.uint32(key & _MASK), np.uint32(key >> _32)
        s0, s1, s2, s3 = np.uint32(CONTEXT_TAG), np.uint32(w), np.uint32(0), np.uint32(0)
        for o in range(0, w, 4):
            block = np.empty(4, np.uint32)
            for i in range(4):  # past the context's end: filler 0xFFFFFFFF - i
                fill = np.uint32(UINT32_MASK - i)
                block[i] = np.uint32(np.uint64(contexts[r, o + i]) & _MASK) if o + i < w else fill
            s0, s1, s2, s3 = philox_rounds(
                s0 ^ block[0],
                s1 ^ block[1],
                s2 ^ block[2],
                s3 ^ block[3],
                np.uint32(k0 ^ np.uint32(o)),
                k1,
            )
        out[r, 0], out[r, 1], out[r, 2], out[r, 3] = s0, s1, s2, s3
    return out


def context_state(keys: torch.Tensor, contexts: torch.Tensor) -> Words:
    """Compress contexts ``[n, w]`` (-1 padded) under keys ``[n]`` into four words ``[n]``."""
    if contexts.is_cuda:
        return _context_state_torch(keys, contexts)
    words = context_states_cpu(keys.contiguous().numpy(), contexts.to(torch.int64).numpy())
    state = torch.from_numpy(words)
    return state[:, 0], state[:, 1], state[:, 2], state[:, 3]


def _context_state_torch(keys: torch.Tensor, contexts: torch.Tensor) -> Words:
    """:func:`context_state` in torch ops (any device; the CUDA path)."""
    n, w = contexts.shape
    ctx = contexts.to(torch.int64) & UINT32_MASK  # -1 -> 0xFFFFFFFF, as upstream
    k0, k1 = key_words(keys)
    zeros = torch.zeros(n, dtype=torch.int64, device=contexts.device)
    state: Words = (zeros + CONTEXT_TAG, zeros + w, zeros, zeros)
    for o in range(0, w, 4):
        block = [ctx[:, o + i] if o + i < w else zeros + (UINT32_MASK - i) for i in range(4)]
        counter = tuple(s ^ b for s, b in zip(state, block, strict=True))
        state = philox4x32_10(counter, k0 ^ o, k1)  # type: ignore[arg-type]
    return state


def candidate_words(keys: torch.Tensor, state: Words, groups: torch.Tensor) -> Words:
    """The four PRF words of token groups ``groups`` ``[n, m]`` (tokens 4g..4g+3) per row."""
    k0, k1 = key_words(keys)
    s0, s1, s2, s3 = (s[:, None] for s in state)
    counter = (groups, s0.expand_as(groups), s1.expand_as(groups), s2.expand_as(groups))
    return philox4x32_10(counter, (k0[:, None] ^ s3), k1[:, None] ^ TOKEN_TAG)


def token_words(keys: torch.Tensor, state: Words, tokens: torch.Tensor) -> torch.Tensor:
    """PRF words of tokens ``[n, m]`` (ids taken mod 2**32) per row of ``state``: ``[n, m]``."""
    t = tokens.to(torch.int64) & UINT32_MASK
    out = candidate_words(keys, state, t >> 2)
    lane = t & 3
    word = out[0]
    for i in range(1, 4):
        word = torch.where(lane == i, out[i], word)
    return word


def vocab_words(keys: torch.Tensor, state: Words, vocab: int) -> torch.Tensor:
    """Words of every token ``0..vocab-1`` per row: ``[n, vocab]``, one Philox call per 4 ids."""
    n = keys.shape[0]
    groups = torch.arange((vocab + 3) // 4, device=keys.device).expand(n, -1)
    out = candidate_words(keys, state, groups)
    return torch.stack(out, dim=-1).reshape(n, -1)[:, :vocab]


def prf_words(keys: torch.Tensor, contexts: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """PRF words (uint32 values in int64) for (key, context, token) triples ``[n]``."""
    state = context_state(keys, contexts)
    return token_words(keys, state, token_ids[:, None])[:, 0]


def uniform(words: torch.Tensor) -> torch.Tensor:
    """Words to float32 uniforms ``float32((m + 1) / (2**24 + 1))``, m the top 24 bits.

    Computed as one float32 step below ``(m + 1) * 2**-24`` (exact in float32), which is the
    same value for every m (tests check all 2**24) and 5x faster than float64 division here.
    """
    m1 = ((words & UINT32_MASK) >> 8) + 1  # [1, 2**24]
    scaled = m1.to(torch.float32) * 2.0**-24
    return (scaled.view(torch.int32) - 1).view(torch.float32)


@triton.jit
def philox_context_state(ctx_ptr, pad, k0, k1, W: tl.constexpr):
    """Context state of W-token contexts stored at ``ctx_ptr .. ctx_ptr + W - 1``.

    Positions ``j < pad`` are the -1 padding and are not loaded. Scalars (one context) or
    blocks (one context per lane, with ``ctx_ptr``, ``pad``, ``k0``, ``k1`` as blocks).
    """
    zero = (k0 * 0).to(tl.uint32)
    s0 = zero + 0x574D4358
    s1 = zero + W
    s2 = zero
    s3 = zero
    for o in tl.static_range(0, W, 4):
        b0 = tl.load(ctx_ptr + o, mask=o >= pad, other=-1).to(tl.uint32)
        b1 = zero + 0xFFFFFFFE  # block filler 0xFFFFFFFF - i past the context's end
        b2 = zero + 0xFFFFFFFD
        b3 = zero + 0xFFFFFFFC
        if o + 1 < W:
            b1 = tl.load(ctx_ptr + o + 1, mask=o + 1 >= pad, other=-1).to(tl.uint32)
        if o + 2 < W:
            b2 = tl.load(ctx_ptr + o + 2, mask=o + 2 >= pad, other=-1).to(tl.uint32)
        if o + 3 < W:
            b3 = tl.load(ctx_ptr + o + 3, mask=o + 3 >= pad, other=-1).to(tl.uint32)
        s0, s1, s2, s3 = tl.philox_impl(s0 ^ b0, s1 ^ b1, s2 ^ b2, s3 ^ b3, k0 ^ o, k1)
    return s0, s1, s2, s3


@triton.jit
def split_key(key):
    """(k0, k1) uint32 words of int64 key patterns."""
    k = key.to(tl.uint64, bitcast=True)
    return (k & 0xFFFFFFFF).to(tl.uint32), (k >> 32).to(tl.uint32)


@triton.jit
def philox_candidates(groups, s0, s1, s2, s3, k0, k1):
    """The four words of token groups ``groups`` (uint32 block) under a context state."""
    zero = groups * 0
    return tl.philox_impl(
        groups, s0 + zero, s1 + zero, s2 + zero, (k0 ^ s3) + zero, (k1 ^ 0x574D544B) + zero
    )


@triton.jit
def words_to_uniform(word):
    """float32((m + 1) / (2**24 + 1)) computed as one float32 step below (m + 1) * 2**-24.

    Both are the same float32 for every 24-bit m (checked exhaustively by the tests), and
    the second needs neither float64 nor a division.
    """
    m = word >> 8
    scaled = (m + 1).to(tl.float32) * 5.9604644775390625e-08  # 2**-24, exact
    return (scaled.to(tl.uint32, bitcast=True) - 1).to(tl.float32, bitcast=True)
