"""CPU keyed draw: every token's PRF word in one compiled loop, exact scores only for the tokens
that can still win.

Why: an untruncated T=1 row keeps most of the vocabulary inside the logit-only pruning bound
(``kernels.gumbel_sample``), so it used to take the eager full scan: ~100 int64 passes over
``[n, V/4]`` plus float32 ``log(-log u)`` over ``[n, V]``, ~0.65 ms per row at V=49152. Here,
one Numba-compiled loop per row (``_candidates``; ~0.04 ms per row at V=49152):

1. Philox4x32-10 on 32-bit lanes for every group of four token ids (products taken as 32x32 ->
   64-bit, which LLVM vectorizes as unsigned 32-bit multiplies; integer ops only, so the
   words are exact by construction). Each word's top ``BUCKET_BITS`` bits pick, from two small
   tables, a lower and an upper bound of the Gumbel noise that word can give, so the loop
   yields ``lower_v = l_v + LO[b_v]`` and ``upper_v = l_v + HI[b_v]`` without any logarithm.
2. The bar is ``max_v lower_v``: every exact score is at least its lower bound, so the best
   exact score is at least the bar. The first pass keeps, per chunk of ``CHUNK`` tokens, only
   the largest upper bound; nothing of size ``[n, V]`` is written. The lower bounds are
   needed only in the chunks whose largest upper bound reaches a first bar (the lower bounds
   of the best chunk): the token with the best lower bound lies in one of them.
3. Those chunks' words are recomputed (a few per row) and their tokens with
   ``upper_v >= bar`` (2-11 of 49,152 on SmolLM2 T=1 rows) get upstream's float32 noise, in
   torch; the winner is among them, ties to the lowest id.

Exactness: ``fl(l_v + LO[b_v]) <= s_v = fl(l_v + g_v) <= fl(l_v + HI[b_v])`` (float32
addition rounds monotonically; ``LO <= g_v <= HI`` with a margin far above float32 rounding),
so the winner scores ``>= bar`` and survives, with every token that ties it; its score is
upstream's computation. The compiled bounds need not match torch bit for bit: only be bounds.
"""

from __future__ import annotations

import numpy as np
import torch

from kernels import philox
from kernels.philox import philox_rounds
from kernels.utils import njit_cached

BUCKET_BITS = 12  # 4096 buckets: the top one (u > 1 - 2**-12) holds ~12 tokens per 49k row
CHUNK = 64  # tokens per chunk of the first pass (16 Philox calls)
_SHIFT = 32 - BUCKET_BITS
_MARGIN = 1e-3  # as kernels.gumbel_sample: far above float32 rounding of the noise (~2e-6)
_GROUPS = CHUNK // 4


def _noise(words: torch.Tensor) -> torch.Tensor:
    """Upstream's float32 Gumbel noise of PRF words (uint32 values in int64)."""
    u = philox.uniform(words)
    return u.clamp_min(torch.finfo(torch.float32).tiny).log_().neg_().log_().neg_()


def _bucket_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """(LO, HI) float32 ``[2**BUCKET_BITS]``: noise bounds of the words in each bucket."""
    first = torch.arange(1 << BUCKET_BITS, dtype=torch.int64) << _SHIFT
    last = first | ((1 << _SHIFT) - 1)
    return _noise(first) - _MARGIN, _noise(last) + _MARGIN  # the noise rises with the word


LO, HI = _bucket_tables()
_LO, _HI = LO.numpy(), HI.numpy()

_MASK, _32 = np.uint64(0xFFFFFFFF), np.uint64(32)


@njit_cached(inline="always")
def _chunk_words(chunk, s0, s1, s2, key0, key1, out):  # type: ignore[no-untyped-def]
    """The PRF words of chunk ``chunk``'s ``CHUNK`` token ids into ``out`` (uint32 ``[CHUNK]``).

    Counter ``(group, s0, s1, s2)``, key ``(key0, key1)`` = ``(k0 ^ s3, k1 ^ TOKEN_TAG)``.
    """
    for g in range(_GROUPS):
        c0, c1, c2, c3 = philox_rounds(np.uint32(chunk * _GROUPS + g), s0, s1, s2, key0, key1)
        out[4 * g] = c0
        out[4 * g + 1] = c1
        out[4 * g + 2] = c2
        out[4 * g + 3] = c3


@njit_cached(inline="always")
def _chunk_upper(x, words, lo_or_hi, base, m):  # type: ignore[no-untyped-def]
    """``max_j x[base + j] + table[words[j] >> _SHIFT]`` over ``j < m``.

    Four accumulators: LLVM keeps this loop scalar on this CPU (gathers priced out, float max
    reductions not vectorized), so the latency chain of one running max would bound it.
    """
    a0 = a1 = a2 = a3 = np.float32(-np.inf)
    j = 0
    while j + 4 <= m:
        v0 = x[base + j] + lo_or_hi[words[j] >> _SHIFT]
        v1 = x[base + j + 1] + lo_or_hi[words[j + 1] >> _SHIFT]
        v2 = x[base + j + 2] + lo_or_hi[words[j + 2] >> _SHIFT]
        v3 = x[base + j + 3] + lo_or_hi[words[j + 3] >> _SHIFT]
        a0 = v0 if v0 > a0 else a0
        a1 = v1 if v1 > a1 else a1
        a2 = v2 if v2 > a2 else a2
        a3 = v3 if v3 > a3 else a3
        j += 4
    while j < m:
        v0 = x[base + j] + lo_or_hi[words[j] >> _SHIFT]
        a0 = v0 if v0 > a0 else a0
        j += 1
    return max(max(a0, a1), max(a2, a3))


@njit_cached()
def _token_keys(keys, state):  # type: ignore[no-untyped-def]
    """The token call's Philox key ``(k0 ^ s3, k1 ^ TOKEN_TAG)`` per row: int64 ``[n, 2]``.

    Kept out of ``_candidates``: derived there, it made LLVM's code for the whole loop ~1.6x
    slower (measured).
    """
    out = np.empty((keys.shape[0], 2), np.int64)
    for r in range(keys.shape[0]):
        key = np.uint64(keys[r])
        out[r, 0] = np.uint32(key & _MASK) ^ np.uint32(state[r, 3])
        out[r, 1] = np.uint32(key >> _32) ^ np.uint32(philox.TOKEN_TAG)
    return out


@njit_cached()
def _candidates(x, state, keys, lo, hi, out_row, out_col, out_word, out_logit):  # type: ignore[no-untyped-def]
    """Write the tokens of rows ``x`` ``[n, V]`` (no NaN) whose upper bound reaches their row's
    bar into the ``out_*`` arrays (as many as fit); return how many there are. ``state``
    ``[n, 4]`` context states, ``keys`` ``[n, 2]`` the token call's keys (``_token_keys``).

    Per row: (1) every chunk's best upper bound; (2) a first bar from the lower bounds of the
    chunk with the best upper bound (any token's lower bound is a valid bar); (3) the chunks
    reaching it: their lower bounds give the row's bar (the token with the best lower bound
    lies in such a chunk), and their tokens with ``upper >= bar`` are the candidates.
    """
    n, vocab = x.shape
    n_chunks = (vocab + CHUNK - 1) // CHUNK
    words = np.empty(CHUNK, np.uint32)
    chunk_hi = np.empty(n_chunks, np.float32)
    # tokens of the chunks that pass step 2 (all of a row at worst: a flat or all -inf row)
    col = np.empty(vocab, np.int64)
    word = np.empty(vocab, np.uint32)
    upper = np.empty(vocab, np.float32)
    cap = out_row.shape[0]
    count = 0
    for r in range(n):
        s0, s1, s2 = np.uint32(state[r, 0]), np.uint32(state[r, 1]), np.uint32(state[r, 2])
        k0, k1 = np.uint32(keys[r, 0]), np.uint32(keys[r, 1])
        xr = x[r]
        top = 0
        for c in range(n_chunks):
            _chunk_words(c, s0, s1, s2, k0, k1, words)
            chunk_hi[c] = _chunk_upper(xr, words, hi, c * CHUNK, min(CHUNK, vocab - c * CHUNK))
            if chunk_hi[c] > chunk_hi[top]:
                top = c
        _chunk_words(top, s0, s1, s2, k0, k1, words)
        first_bar = _chunk_upper(xr, words, lo, top * CHUNK, min(CHUNK, vocab - top * CHUNK))
        bar = first_bar
        kept = 0
        for c in range(n_chunks):
            if chunk_hi[c] < first_bar:
                continue
            _chunk_words(c, s0, s1, s2, k0, k1, words)
            base = c * CHUNK
            for j in range(min(CHUNK, vocab - base)):
                v = xr[base + j]
                b = words[j] >> _SHIFT
                bar = max(bar, v + lo[b])
                if v + hi[b] >= first_bar:
                    col[kept], word[kept], upper[kept] = base + j, words[j], v + hi[b]
                    kept += 1
        for i in range(kept):
            if upper[i] >= bar:
                if count < cap:
                    out_row[count] = r
                    out_col[count] = col[i]
                    out_word[count] = word[i]
                    out_logit[count] = xr[col[i]]
                count += 1
    return count


@njit_cached()
def _select(n, vocab, row, col, score):  # type: ignore[no-untyped-def]
    """Per row, the lowest column among its candidates' maximal scores (``vocab`` if none)."""
    best = np.full(n, -np.inf, np.float32)
    ids = np.full(n, vocab, np.int64)
    for i in range(row.shape[0]):
        r, s = row[i], score[i]
        if s > best[r] or (s == best[r] and col[i] < ids[r]):
            best[r] = s
            ids[r] = col[i]
    return ids


def candidates(
    x: torch.Tensor, keys: torch.Tensor, state: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, PRF word, logit) of every token of float32 rows ``x`` ``[n, V]`` (no NaN)
    that can still win its row's keyed draw; ``state`` int64 ``[n, 4]`` context states."""
    n, vocab = x.shape
    xs, token_keys = x.contiguous().numpy(), _token_keys(keys.numpy(), state)
    cap = 64 * n
    while True:  # more than 64 per row only on flat or tied rows (an all -inf row: every token)
        out = (
            np.empty(cap, np.int64),
            np.empty(cap, np.int64),
            np.empty(cap, np.int64),
            np.empty(cap, np.float32),
        )
        count = _candidates(xs, state, token_keys, _LO, _HI, *out)
        if count <= cap:
            return out[0][:count], out[1][:count], out[2][:count], out[3][:count]
        cap = count


def dense_draw(x: torch.Tensor, keys: torch.Tensor, state: philox.Words) -> torch.Tensor:
    """Exact keyed draw (upstream's token) for float32 rows ``x`` ``[n, V]`` (no NaN) on CPU,
    int64 key patterns ``keys`` ``[n]`` and their context states (``philox.context_state``)."""
    n, vocab = x.shape
    row, col, word, logit = candidates(x, keys, torch.stack(state, dim=1).numpy())
    scores = torch.from_numpy(logit) + _noise(torch.from_numpy(word))  # upstream's float32 ops
    return torch.from_numpy(_select(n, vocab, row, col, scores.numpy()))


def warm_up() -> None:
    """Compile now (a few seconds; cached on disk afterwards) rather than on the first token."""
    keys = torch.arange(1, 3)
    dense_draw(torch.zeros(2, 3), keys, philox.context_state(keys, torch.zeros(2, 4).long()))
