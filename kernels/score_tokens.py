"""Batch detection scoring: per-token scores ``-log(1 - u)`` for many ragged documents at once.

``token_ids`` ``[total]`` holds D documents back to back (``cu_seqlens`` ``[D+1]``, starting
at 0); document d is scored under its key ``keys[d]``. Every position gets a score; the
context of a position is the ``context_width`` preceding tokens *of the same document*,
left-padded with -1 (docs/spec.md §3). De-duplication is the detector's business: it applies
its own mask to these scores.

- ``gumbel``: ``s = -log1p(-u)`` in float64 from the float32 uniform (upstream's formula).
- ``dual_key_gumbel``: ``(1 - alpha) s_A + alpha s_B`` with keys ``derive(K, b"key_a")`` and
  ``derive(K, b"key_b")`` (SHA-256, hashed on the host: D hashes, nothing per token).
"""

from __future__ import annotations

import hashlib

import torch

from kernels import philox
from kernels.philox import philox_candidates, philox_context_state, split_key, words_to_uniform
from kernels.utils import Backend, check_keys, tl, triton, use_kernel

ALGORITHMS = ("gumbel", "dual_key_gumbel")
_CHUNK = 1 << 18  # reference tokens per pass: bounds the [n] int64 Philox buffers (~20 MB)
_BLOCK = 256  # kernel tokens per program


def derive_keys(keys: torch.Tensor, domain: bytes) -> torch.Tensor:
    """``derive(K, domain)`` per key pattern: first 8 bytes of SHA-256(domain || K_be8)."""
    out = []
    for k in keys.tolist():  # int64 patterns: their 8 bytes are the key's, two's complement
        digest = hashlib.sha256(domain + k.to_bytes(8, "big", signed=True)).digest()
        out.append(int.from_bytes(digest[:8], "big", signed=True))
    return torch.tensor(out, dtype=torch.int64, device=keys.device)


def _check(
    token_ids: torch.Tensor,
    cu_seqlens: torch.Tensor,
    keys: torch.Tensor,
    context_width: int,
    algorithm: str,
    alpha: float,
) -> None:
    if token_ids.ndim != 1 or token_ids.dtype != torch.int64:
        raise ValueError("token_ids must be an int64 [total] tensor")
    if cu_seqlens.ndim != 1 or cu_seqlens.dtype != torch.int64 or cu_seqlens.numel() < 1:
        raise ValueError("cu_seqlens must be an int64 [D + 1] tensor")
    check_keys(keys, cu_seqlens.numel() - 1)
    if int(cu_seqlens[0]) != 0 or int(cu_seqlens[-1]) != token_ids.numel():
        raise ValueError("cu_seqlens must start at 0 and end at len(token_ids)")
    if bool((cu_seqlens.diff() < 0).any()):
        raise ValueError("cu_seqlens must be non-decreasing")
    if isinstance(context_width, bool) or not isinstance(context_width, int) or context_width < 1:
        raise ValueError("context_width must be a positive integer")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError("alpha must lie in [0, 1]")
    for name, t in (("cu_seqlens", cu_seqlens), ("keys", keys)):
        if t.device != token_ids.device:
            raise ValueError(f"{name} must be on the device of token_ids")


def _doc_index(cu_seqlens: torch.Tensor, total: int) -> torch.Tensor:
    """Document of every position ``[total]``."""
    docs = torch.arange(cu_seqlens.numel() - 1, device=cu_seqlens.device)
    return torch.repeat_interleave(docs, cu_seqlens.diff(), output_size=total)


def _contexts(
    token_ids: torch.Tensor, starts: torch.Tensor, lo: int, hi: int, w: int
) -> torch.Tensor:
    """Contexts ``[hi - lo, w]`` of positions lo..hi-1 (their documents start at ``starts``)."""
    pos = torch.arange(lo, hi, device=token_ids.device)[:, None] + torch.arange(
        -w, 0, device=token_ids.device
    )
    inside = pos >= starts[:, None]
    return torch.where(inside, token_ids[pos.clamp_min(0)], -1)


def _scores_under(keys: torch.Tensor, contexts: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    u = philox.uniform(philox.prf_words(keys, contexts, tokens))
    return -torch.log1p(-u.to(torch.float64))


def score_tokens_reference(
    token_ids: torch.Tensor,
    cu_seqlens: torch.Tensor,
    keys: torch.Tensor,
    *,
    context_width: int = 4,
    algorithm: str = "gumbel",
    alpha: float = 0.1,
) -> torch.Tensor:
    """Pure-torch scores, float64 ``[total]`` (chunks of 256 K tokens)."""
    _check(token_ids, cu_seqlens, keys, context_width, algorithm, alpha)
    total = token_ids.numel()
    doc = _doc_index(cu_seqlens, total)
    starts = cu_seqlens[doc]
    key_sets = (
        [keys]
        if algorithm == "gumbel"
        else [derive_keys(keys, b"key_a"), derive_keys(keys, b"key_b")]
    )
    out = torch.empty(total, dtype=torch.float64, device=token_ids.device)
    for lo in range(0, total, _CHUNK):
        hi = min(lo + _CHUNK, total)
        ctx = _contexts(token_ids, starts[lo:hi], lo, hi, context_width)
        parts = [_scores_under(ks[doc[lo:hi]], ctx, token_ids[lo:hi]) for ks in key_sets]
        out[lo:hi] = parts[0] if len(parts) == 1 else (1 - alpha) * parts[0] + alpha * parts[1]
    return out


def score_tokens(
    token_ids: torch.Tensor,
    cu_seqlens: torch.Tensor,
    keys: torch.Tensor,
    *,
    context_width: int = 4,
    algorithm: str = "gumbel",
    alpha: float = 0.1,
    backend: Backend = "auto",
) -> torch.Tensor:
    """Per-token scores float64 ``[total]``; see the module docstring. ``keys``: int64 ``[D]``
    64-bit key patterns (master keys for ``dual_key_gumbel``). ``backend``: see ``kernels.utils``.
    """
    _check(token_ids, cu_seqlens, keys, context_width, algorithm, alpha)
    if not use_kernel(token_ids, backend):
        return score_tokens_reference(
            token_ids,
            cu_seqlens,
            keys,
            context_width=context_width,
            algorithm=algorithm,
            alpha=alpha,
        )
    dual = algorithm == "dual_key_gumbel"
    keys_a = derive_keys(keys, b"key_a") if dual else keys
    keys_b = derive_keys(keys, b"key_b") if dual else keys
    total = token_ids.numel()
    out = torch.empty(total, dtype=torch.float64, device=token_ids.device)
    if total == 0:
        return out
    doc = _doc_index(cu_seqlens, total)
    # The weights travel as float64 in memory: a Python float argument would reach the
    # kernel as float32 (0.1 -> 0.10000000149) and shift every dual-key score.
    weights = torch.tensor([1 - alpha, alpha], dtype=torch.float64, device=token_ids.device)
    _score_tokens_kernel[(triton.cdiv(total, _BLOCK),)](
        token_ids.contiguous(),
        doc,
        cu_seqlens.contiguous(),
        keys_a.contiguous(),
        keys_b.contiguous(),
        weights,
        out,
        total,
        W=context_width,
        DUAL=dual,
        BLOCK=_BLOCK,
    )
    return out


@triton.jit
def _score_under(tok_ptr, offs, pad, t, key, W: tl.constexpr):
    """float64 ``-log(1 - u)`` of tokens ``t`` at positions ``offs`` under per-lane ``key``.

    ``1 - u`` is exact in float64 (u has 24 significant bits, u >= 2**-25), so this equals
    ``-log1p(-u)`` up to the last bit of the float64 log.
    """
    k0, k1 = split_key(key)
    s0, s1, s2, s3 = philox_context_state(tok_ptr + offs - W, pad, k0, k1, W)
    w0, w1, w2, w3 = philox_candidates(t >> 2, s0, s1, s2, s3, k0, k1)
    lane = t & 3
    word = tl.where(lane == 0, w0, tl.where(lane == 1, w1, tl.where(lane == 2, w2, w3)))
    u = words_to_uniform(word).to(tl.float64)
    return -tl.log(1.0 - u)


@triton.jit
def _score_tokens_kernel(
    tok_ptr,
    doc_ptr,
    cu_ptr,
    keys_a_ptr,
    keys_b_ptr,
    weights_ptr,
    out_ptr,
    total,
    W: tl.constexpr,
    DUAL: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """One lane per position: context from the same document (-1 before its start), PRF, score."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < total
    doc = tl.load(doc_ptr + offs, mask=valid, other=0)
    start = tl.load(cu_ptr + doc, mask=valid, other=0)
    # Context slot j holds token offs - W + j; slots j < pad fall before the document.
    pad = tl.where(valid, W - (offs - start), W)
    t = tl.load(tok_ptr + offs, mask=valid, other=0).to(tl.uint32)
    score = _score_under(tok_ptr, offs, pad, t, tl.load(keys_a_ptr + doc, mask=valid, other=0), W)
    if DUAL:
        score_b = _score_under(
            tok_ptr, offs, pad, t, tl.load(keys_b_ptr + doc, mask=valid, other=0), W
        )
        score = tl.load(weights_ptr) * score + tl.load(weights_ptr + 1) * score_b
    tl.store(out_ptr + offs, score, mask=valid)
