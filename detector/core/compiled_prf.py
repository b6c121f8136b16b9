"""The keyed PRF (``detector.core.prf``: Philox4x32-10 on uint32 words) of chosen rows,
compiled by Numba: each row's PRF computed where it lies, without numpy's gathered copy of
the rows and its whole-array passes (``detector.core.scoring`` of long inputs).

- ``uniforms``: the uniforms of the rows of a context array where a mask holds, in order.
- ``spread_uniforms``: the same straight from the token ids (the rows ``build_contexts``
  would hold, no context array), at their positions in an array of one value per id.

A third compiled copy of the PRF beside ``kernels.philox`` (which needs torch, too costly an
import for the detector), pinned bit for bit to the numpy one by tests. Imported, like
``detector.core.compiled``, on first use by a text of ``COMPILED_FROM`` tokens or more.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from detector.core import prf
from detector.core.compiled import _S32, _njit

_PHILOX_M0, _PHILOX_M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_PHILOX_W0, _PHILOX_W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
_ROUNDS = 10


_LANES = 64  # rows per batch: the Philox rounds run over them as SIMD lanes


@_njit
def _philox_lanes(c0, c1, c2, c3, k0, k1, m):  # type: ignore[no-untyped-def]
    """Philox4x32-10 (``prf._philox_rounds``) in place on the first ``m`` lanes of the uint32
    counter arrays ``c0..c3``; ``k0`` a key word per lane (bumped in place), ``k1`` one for
    all. Rounds outside, lanes inside: LLVM vectorizes the lanes (32x32 -> 64-bit products).
    Numba widens uint32 arithmetic to 64 bits, so every word is cut back to 32 bits."""
    for _ in range(_ROUNDS):
        for j in range(m):
            p0 = np.uint64(c0[j]) * _PHILOX_M0
            p1 = np.uint64(c2[j]) * _PHILOX_M1
            a = np.uint32(((p1 >> _S32) ^ c1[j] ^ k0[j]) & _LOW)
            b = np.uint32(((p0 >> _S32) ^ c3[j] ^ k1) & _LOW)
            c1[j] = np.uint32(p1 & _LOW)
            c3[j] = np.uint32(p0 & _LOW)
            c0[j] = a
            c2[j] = b
            k0[j] = np.uint32((k0[j] + _PHILOX_W0) & _LOW)  # the last bump is never used
        k1 = np.uint32((k1 + _PHILOX_W1) & _LOW)


@_njit
def _word(contexts, ids, i, col, width, from_ids, pad):  # type: ignore[no-untyped-def]
    """Column ``col`` of row ``i``'s context as a uint32 word (ids wrap: -1 padding is
    0xFFFFFFFF); ``pad`` past the width. From ``contexts[i, col]``, or with ``from_ids``
    straight from ``ids`` (the row ``build_contexts`` would hold)."""
    if col >= width:
        return pad
    if from_ids:
        k = i - width + col
        v = ids[k] if k >= 0 else np.int64(-1)
    else:
        v = contexts[i, col]
    return np.uint32(np.uint64(v) & _LOW)


@_njit
def _uniforms(contexts, ids, rows, k0, k1, context_tag, token_tag, width, from_ids, spread, out):  # type: ignore[no-untyped-def]
    """``prf.uniform(prf.uint32(...))`` of the rows where ``rows`` holds: the context
    compressed into a 4-word state (``prf._context_state``), the candidate-token call on it,
    the word of the token's lane, and float32 ``(m + 1) / (2**24 + 1)`` of its top 24 bits
    ``m``. Written to ``out[k]`` for the k-th such row, or with ``spread`` to ``out[i]`` for
    row ``i`` (the other entries untouched; ``out`` float32, or float64 holding the same
    values). The rows are gathered 64 at a time, so no index array is built."""
    total, w = ids.shape[0], width
    c0, c1 = np.empty(_LANES, np.uint32), np.empty(_LANES, np.uint32)
    c2, c3 = np.empty(_LANES, np.uint32), np.empty(_LANES, np.uint32)
    keys, tokens = np.empty(_LANES, np.uint32), np.empty(_LANES, np.uint32)
    at = np.empty(_LANES, np.int64)
    row, written = 0, 0
    while True:
        m = 0
        while m < _LANES and row < total:
            if rows[row]:
                at[m] = row
                m += 1
            row += 1
        if m == 0:
            break
        for j in range(m):
            c0[j], c1[j], c2[j], c3[j] = context_tag, np.uint32(w), np.uint32(0), np.uint32(0)
        for o in range(0, w, 4):
            for j in range(m):
                i = at[j]
                # past the width, lane k of the last group reads 0xFFFFFFFF - k
                c0[j] ^= _word(contexts, ids, i, o, w, from_ids, np.uint32(0xFFFFFFFF))
                c1[j] ^= _word(contexts, ids, i, o + 1, w, from_ids, np.uint32(0xFFFFFFFE))
                c2[j] ^= _word(contexts, ids, i, o + 2, w, from_ids, np.uint32(0xFFFFFFFD))
                c3[j] ^= _word(contexts, ids, i, o + 3, w, from_ids, np.uint32(0xFFFFFFFC))
                keys[j] = np.uint32(k0 ^ np.uint32(o))
            _philox_lanes(c0, c1, c2, c3, keys, k1, m)
        for j in range(m):  # counter (token >> 2, s0, s1, s2), key (k0 ^ s3, k1 ^ TOKEN_TAG)
            t = np.uint32(np.uint64(ids[at[j]]) & _LOW)
            tokens[j] = t
            keys[j] = np.uint32(k0 ^ c3[j])
            c3[j], c2[j], c1[j], c0[j] = c2[j], c1[j], c0[j], np.uint32(t >> np.uint32(2))
        _philox_lanes(c0, c1, c2, c3, keys, np.uint32(k1 ^ token_tag), m)
        for j in range(m):
            lane = tokens[j] & np.uint32(3)
            word = c0[j] if lane == 0 else (c1[j] if lane == 1 else (c2[j] if lane == 2 else c3[j]))
            u = np.float32((np.float64(word >> np.uint32(8)) + 1.0) / 16777217.0)
            out[at[j] if spread else written + j] = u
        written += m


def uniforms(
    key: int, contexts: NDArray[np.int64], ids: NDArray[np.int64], mask: NDArray[np.bool_]
) -> NDArray[np.float32]:
    """``prf.uniform(prf.uint32(key, contexts[mask], ids[mask]))`` without the gathers: the
    PRF of each scored row computed where it lies (``key`` checked by the caller)."""
    contexts = np.ascontiguousarray(contexts, np.int64)
    ids = np.ascontiguousarray(ids, np.int64)
    mask = np.ascontiguousarray(mask, np.bool_)
    if contexts.ndim != 2 or contexts.shape[1] < 1 or contexts.shape[0] != ids.shape[0]:
        raise ValueError("contexts must be [n, w] with w >= 1 and token_ids [n]")
    if mask.shape != ids.shape:
        raise ValueError("the mask needs one value per token")
    out = np.empty(int(np.count_nonzero(mask)), np.float32)
    _run_uniforms(key, contexts, ids, mask, contexts.shape[1], False, False, out)
    return out


def spread_uniforms(
    key: int, ids: NDArray[np.int64], width: int, mask: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """``uniforms(key, build_contexts(ids, width), ids, mask)`` spread over every id, as
    float64: a value per id, the uniform where ``mask`` holds and 0.0 elsewhere. No context
    array, index array or gathered copy is built."""
    ids = np.ascontiguousarray(ids, np.int64)
    mask = np.ascontiguousarray(mask, np.bool_)
    if width < 1 or mask.shape != ids.shape:
        raise ValueError("the width must be at least 1 and the mask needs one value per token")
    out = np.zeros(ids.shape[0], np.float64)
    _run_uniforms(key, _NO_CONTEXTS, ids, mask, width, True, True, out)
    return out


_NO_CONTEXTS = np.zeros((1, 1), np.int64)


def _run_uniforms(
    key: int,
    contexts: NDArray[np.int64],
    ids: NDArray[np.int64],
    rows: NDArray[np.bool_],
    width: int,
    from_ids: bool,
    spread: bool,
    out: NDArray[np.floating[Any]],
) -> None:
    _uniforms(
        contexts,
        ids,
        rows,
        np.uint32(key & 0xFFFFFFFF),
        np.uint32(key >> 32),
        np.uint32(prf.CONTEXT_TAG),
        np.uint32(prf.TOKEN_TAG),
        int(width),
        bool(from_ids),
        bool(spread),
        out,
    )
