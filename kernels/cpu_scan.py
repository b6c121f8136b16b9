"""CPU dense keyed draw: every token's PRF word in one compiled loop, then exact scores only
for the tokens that can still win.

Why: an untruncated T=1 row keeps most of the vocabulary inside the logit-only pruning bound
(``kernels.gumbel_sample``), so it used to take the eager full scan: ~100 int64 passes over
``[n, V/4]`` plus float32 ``log(-log u)`` over ``[n, V]``, ~0.65 ms per row at V=49152. Here:

1. ``torch.compile`` (Inductor's C++ backend) fuses the ten Philox rounds into one loop over the
   vocabulary (integer ops only, so the words are exact by construction; ~0.06 ms per row).
   In the same loop each word's top ``BUCKET_BITS`` bits pick, from two small tables, a lower
   and an upper bound of the Gumbel noise that word can give, so the loop also yields
   ``lower_v = l_v + LO[b_v]`` and ``upper_v = l_v + HI[b_v]`` without any logarithm.
2. The bar is ``max_v lower_v``: every exact score is at least its lower bound, so the best
   exact score is at least the bar.
3. Only tokens with ``upper_v >= bar`` get the exact eager noise (2-11 of 49,152 on
   SmolLM2 T=1 rows); the winner is among them, ties to the lowest id.

Exactness: ``fl(l_v + LO[b_v]) <= s_v = fl(l_v + g_v) <= fl(l_v + HI[b_v])`` (float32
addition rounds monotonically; ``LO <= g_v <= HI`` with a margin far above float32 rounding),
so the winner scores ``>= bar`` and survives, with every token that ties it; its score is
upstream's computation. The compiled bounds need not match eager bit for bit: only be bounds.

No compiler, or ``PROVENANCE_KERNELS_COMPILE=0``: the same function runs eagerly (exact, slower).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import torch

from kernels import philox
from kernels.utils import UINT32_MASK

log = logging.getLogger(__name__)
BUCKET_BITS = 12  # 4096 buckets: the top one (u > 1 - 2**-12) holds ~12 tokens per 49k row
COMPILE_ENV = "PROVENANCE_KERNELS_COMPILE"
CHUNK = 64  # columns per chunk maximum when looking for survivors
_SHIFT = 32 - BUCKET_BITS
_MARGIN = 1e-3  # as kernels.gumbel_sample: far above float32 rounding of the noise (~2e-6)


def _noise(words: torch.Tensor) -> torch.Tensor:
    u = philox.uniform(words)
    return u.clamp_min(torch.finfo(torch.float32).tiny).log_().neg_().log_().neg_()


def _bucket_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """(LO, HI) float32 ``[2**BUCKET_BITS]``: noise bounds of the words in each bucket."""
    first = torch.arange(1 << BUCKET_BITS, dtype=torch.int64) << _SHIFT
    last = first | ((1 << _SHIFT) - 1)
    return _noise(first) - _MARGIN, _noise(last) + _MARGIN  # the noise rises with the word


LO, HI = _bucket_tables()


def _rounds(c: list[torch.Tensor], k0: torch.Tensor, k1: torch.Tensor) -> list[torch.Tensor]:
    """Philox4x32-10, functional (uint32 values in int64), for the compiler to fuse."""
    c0, c1, c2, c3 = c
    for r in range(10):
        p0, p1 = c0 * philox.PHILOX_M0, c2 * philox.PHILOX_M1  # exact modulo 2**64
        c0, c1, c2, c3 = (
            ((p1 >> 32) ^ c1 ^ k0) & UINT32_MASK,
            p1 & UINT32_MASK,
            ((p0 >> 32) ^ c3 ^ k1) & UINT32_MASK,
            p0 & UINT32_MASK,
        )
        if r < 9:
            k0, k1 = (k0 + philox.PHILOX_W0) & UINT32_MASK, (k1 + philox.PHILOX_W1) & UINT32_MASK
    return [c0, c1, c2, c3]


def _scan(
    x: torch.Tensor, state: torch.Tensor, keys: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(words as int32 bit patterns, lower, upper score bounds) ``[n, V]`` for logits ``x``.

    ``state`` ``[n, 4]`` context states, ``keys`` ``[n, 2]`` the Philox key words of the
    token call (``k0 ^ s3``, ``k1 ^ TOKEN_TAG``).
    """
    n, vocab = x.shape
    groups = torch.arange((vocab + 3) // 4, device=x.device, dtype=torch.int64)[None, :]
    width = groups.shape[1]
    counter = [groups.expand(n, -1)] + [state[:, i : i + 1].expand(n, width) for i in range(3)]
    words = torch.stack(_rounds(counter, keys[:, :1], keys[:, 1:]), dim=-1)  # [n, G, 4]
    words = words.reshape(n, -1)[:, :vocab]
    bucket = words >> _SHIFT
    # int32 words: half the bytes to write. The row's bar is taken outside: a reduction in
    # this graph made Inductor recompute the rounds (3.4 ms against 0.9 ms at B=8, measured).
    return words.to(torch.int32), x + lo[bucket], x + hi[bucket]


_lock = threading.Lock()
_compiled: list[Callable[..., Any]] = []


def _scanner() -> Callable[..., Any]:
    """The compiled ``_scan`` (once per process), or the eager one where compiling fails."""
    with _lock:
        if not _compiled:
            fn: Callable[..., Any] = _scan
            if os.environ.get(COMPILE_ENV, "1") != "0":
                fn = torch.compile(_scan, dynamic=True)
            _compiled.append(fn)
        return _compiled[0]


def _run(*args: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    fn = _scanner()
    if fn is _scan:
        return _scan(*args)
    try:
        return fn(*args)
    except Exception as exc:  # no C++ compiler, an Inductor bug: stay exact, eagerly
        log.warning("compiled CPU scan unavailable (%s); using the eager scan", type(exc).__name__)
        with _lock:
            _compiled[:] = [_scan]
        return _scan(*args)


def dense_draw(x: torch.Tensor, keys: torch.Tensor, state: philox.Words) -> torch.Tensor:
    """Exact keyed draw (upstream's token) for float32 rows ``x`` ``[n, V]`` on CPU."""
    n, vocab = x.shape
    k0, k1 = philox.key_words(keys)
    st = torch.stack(state, dim=1)  # [n, 4]
    tk = torch.stack((k0 ^ st[:, 3], k1 ^ philox.TOKEN_TAG), dim=1)  # [n, 2]
    # -inf columns up to a multiple of CHUNK, and >= 2 rows: a size-1 dimension would cost
    # a recompile. Padding never wins: it scores -inf, and ties go to the lowest id.
    xp = x.contiguous()
    if vocab % CHUNK:  # 49152 needs none: skip the copy
        xp = torch.nn.functional.pad(xp, (0, -vocab % CHUNK), value=float("-inf"))
    if n < 2:
        xp, st, tk = (torch.cat([t, t]) for t in (xp, st, tk))
    words, lower, upper = _run(xp, st, tk, LO, HI)  # [n', V'] each
    row, col = _survivors(lower[:n], upper[:n])
    word = words[row, col].to(torch.int64) & UINT32_MASK
    scores = xp[row, col] + _noise(word)  # upstream's float32 ops, survivors only
    best = torch.full((n,), float("-inf")).scatter_reduce(0, row, scores, "amax")
    ids = torch.where(scores == best[row], col, vocab)  # lowest id among each row's maxima
    return torch.full((n,), vocab, dtype=torch.int64).scatter_reduce(0, row, ids, "amin")


def _survivors(lower: torch.Tensor, upper: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(row, column) of the tokens whose upper bound reaches their row's best lower bound.

    Chunk maxima first: a comparison and nonzero over all of ``[n, V]`` cost 0.5 ms at B=8
    (measured), the chunk maxima 0.03 ms, and only a few chunks per row hold a survivor.
    """
    n, width = upper.shape
    bar = lower.amax(dim=-1)  # [n]: the best exact score is at least this
    chunks = upper.view(n, width // CHUNK, CHUNK)
    r, c = (chunks.amax(dim=-1) >= bar[:, None]).nonzero(as_tuple=True)
    i, j = (chunks[r, c] >= bar[r, None]).nonzero(as_tuple=True)
    return r[i], c[i] * CHUNK + j


def warm_up() -> None:
    """Compile now (a few seconds; ~20 s with a cold Inductor cache) rather than on the first
    sampled token."""
    x = torch.zeros(2, 64)
    dense_draw(
        x,
        torch.tensor([1, 2]),
        philox.context_state(torch.tensor([1, 2]), torch.zeros(2, 4, dtype=torch.int64)),
    )
