"""Compiled (Numba) passes behind the detector's masks on long texts.

- ``gram_hashes``: every position's keyless context hash and its n-gram fingerprint
  (``detector.text.ngrams.fingerprints``: the context hash mixed with the token) in one loop.
- ``dedup_mask``: ``detector.core.contexts.dedup_mask`` through an open-addressing hash set
  of contexts keyed by those hashes; rows that share a hash tag are compared in full, so the
  mask is exact for any width, any ids and any ``max_history``.
- ``HashSet``: an n-gram table's fingerprints in an open-addressing set, built once per
  table, O(1) a look-up.
- ``uniforms``: the keyed PRF (``detector.core.prf``: Philox4x32-10 on uint32 words) of the
  scored rows, each computed where it lies, without numpy's gathered copy of the rows and its
  whole-array passes (``detector.core.scoring.token_scores`` of long inputs). A third
  compiled copy of the PRF beside ``kernels.philox`` (which needs torch, too costly an import
  for the detector), pinned bit for bit to the numpy one by tests.

Each answers exactly what the numpy code it stands in for answers (pinned by tests on random
and real texts): it only avoids that code's temporaries, sorts and per-call set-up. Imported
on first use by a text of ``detector.core.contexts.COMPILED_FROM`` tokens or more: importing
Numba and loading the cached machine code cost ~0.9 s of CPU once a process (a first compile,
where no cache exists yet, ~8 s).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray


def _njit(fn: Callable[..., Any]) -> Any:
    """``numba.njit`` cached on disk; where no cache location is writable, compiled in memory."""
    flags = {"nogil": True, "boundscheck": False}
    try:
        return numba.njit(cache=True, **flags)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, **flags)(fn)


# splitmix64's finaliser, as ``detector.text.ngrams._mix`` (wrapping uint64 arithmetic)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31, _S32 = np.uint64(27), np.uint64(30), np.uint64(31), np.uint64(32)
_TOKEN_TAG = np.uint64(1 << 40)


@_njit
def _mix(x):  # type: ignore[no-untyped-def]
    x = x ^ (x >> _S30)
    x = x * _M1
    x = x ^ (x >> _S27)
    x = x * _M2
    return x ^ (x >> _S31)


@_njit
def _context_hash(ids, i, width):  # type: ignore[no-untyped-def]
    """Keyless hash of position ``i``'s context (the ``width`` ids before it, -1 padding)."""
    h = np.uint64(width)
    for j in range(width):
        k = i - width + j
        v = ids[k] + 1 if k >= 0 else 0
        h = _mix(h ^ np.uint64(v))
    return h


@_njit
def _hashes(ids, width):  # type: ignore[no-untyped-def]
    """(keyless context hash, 32-bit n-gram fingerprint) of every position of ``ids``."""
    n = ids.shape[0]
    context = np.empty(n, np.uint64)
    gram = np.empty(n, np.uint32)
    for i in range(n):
        h = _context_hash(ids, i, width)
        context[i] = h
        gram[i] = np.uint32(_mix(h ^ (np.uint64(ids[i]) + _TOKEN_TAG)) >> _S32)
    return context, gram


@_njit
def _row_hashes(contexts):  # type: ignore[no-untyped-def]
    """The keyless context hash of every row of ``contexts`` ``[n, w]``."""
    n, w = contexts.shape
    out = np.empty(n, np.uint64)
    for i in range(n):
        h = np.uint64(w)
        for j in range(w):
            h = _mix(h ^ np.uint64(contexts[i, j] + 1))
        out[i] = h
    return out


@_njit
def _same_row(contexts, a, b):  # type: ignore[no-untyped-def]
    for j in range(contexts.shape[1]):
        if contexts[a, j] != contexts[b, j]:
            return False
    return True


@_njit
def _dedup(hashes, contexts, max_history):  # type: ignore[no-untyped-def]
    """True where row i of ``contexts`` did not occur among the ``max_history`` rows before it
    (all rows before it when ``max_history < 0``); ``hashes``: the rows' hashes.

    Open addressing, load at most 1/2: a slot holds the hash's high word and the last position
    of its row plus one (0: empty); rows whose hashes share a slot tag are compared in full.
    """
    n = hashes.shape[0]
    size = 16
    while size < 2 * n:
        size <<= 1
    slots = np.zeros(size, np.uint64)
    mask = np.uint64(size - 1)
    low = np.uint64(0xFFFFFFFF)
    out = np.zeros(n, np.bool_)
    for i in range(n):
        h = hashes[i]
        tag = h & ~low
        s = h & mask
        while True:
            e = slots[s]
            if e == 0:
                out[i] = True
                break
            if (e & ~low) == tag:
                last = np.int64(e & low) - 1
                if _same_row(contexts, last, i):
                    out[i] = max_history >= 0 and i - last > max_history
                    break
            s = (s + np.uint64(1)) & mask
        slots[s] = tag | np.uint64(i + 1)
    return out


@_njit
def _build_set(values):  # type: ignore[no-untyped-def]
    """Open-addressing set of uint32 ``values`` (load at most 0.4). 0 marks an empty slot, so
    whether 0 itself is a member is returned beside. The values are uniform hashes already,
    so their low bits index the slots."""
    size = 16
    while 2 * size < 5 * values.shape[0]:
        size <<= 1
    slots = np.zeros(size, np.uint32)
    mask = np.uint32(size - 1)
    zero = False
    for x in values:
        if x == 0:
            zero = True
            continue
        k = x & mask
        while slots[k] != 0 and slots[k] != x:
            k = (k + np.uint32(1)) & mask
        slots[k] = x
    return slots, zero


@_njit
def _members(values, slots, zero):  # type: ignore[no-untyped-def]
    mask = np.uint32(slots.shape[0] - 1)
    out = np.zeros(values.shape[0], np.bool_)
    for i in range(values.shape[0]):
        x = values[i]
        if x == 0:
            out[i] = zero
            continue
        k = x & mask
        while True:
            y = slots[k]
            if y == x:
                out[i] = True
                break
            if y == 0:
                break
            k = (k + np.uint32(1)) & mask
    return out


class HashSet:
    """A set of uint32 values (an n-gram table's fingerprints), built once, O(1) look-ups."""

    def __init__(self, values: NDArray[np.uint32]):
        self._slots, self._zero = _build_set(np.ascontiguousarray(values, np.uint32))

    def contains(self, values: NDArray[np.uint32]) -> NDArray[np.bool_]:
        """True where ``values[i]`` is in the set."""
        return _members(np.ascontiguousarray(values, np.uint32), self._slots, self._zero)  # type: ignore[no-any-return]


def gram_hashes(
    ids: NDArray[np.int64], width: int
) -> tuple[NDArray[np.uint64], NDArray[np.uint32]]:
    """(keyless context hash, n-gram fingerprint) of every position of ``ids``: the context
    hash is ``context_hashes(build_contexts(ids, width))``, the fingerprint
    ``detector.text.ngrams.fingerprints(ids, width)``."""
    return _hashes(np.ascontiguousarray(ids, np.int64), int(width))  # type: ignore[no-any-return]


def context_hashes(contexts: NDArray[np.int64]) -> NDArray[np.uint64]:
    """The keyless hash of every row of ``contexts`` ``[n, w]``."""
    return _row_hashes(np.ascontiguousarray(contexts, np.int64))  # type: ignore[no-any-return]


def dedup_mask(
    contexts: NDArray[np.int64],
    max_history: int | None = None,
    hashes: NDArray[np.uint64] | None = None,
) -> NDArray[np.bool_]:
    """``detector.core.contexts.dedup_mask`` in one hashed pass (``hashes``: the rows'
    ``context_hashes``, when the caller has them)."""
    contexts = np.ascontiguousarray(contexts, np.int64)
    if hashes is None:
        hashes = _row_hashes(contexts)
    history = -1 if max_history is None else int(max_history)
    return _dedup(hashes, contexts, history)  # type: ignore[no-any-return]


# --- the keyed PRF (``detector.core.prf``) of the scored positions, straight from the rows ----

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
def _uniforms(contexts, ids, positions, k0, k1, context_tag, token_tag):  # type: ignore[no-untyped-def]
    """``prf.uniform(prf.uint32(...))`` of rows ``positions``: the context compressed into a
    4-word state (``prf._context_state``), the candidate-token call on it, the word of the
    token's lane, and float32 ``(m + 1) / (2**24 + 1)`` of its top 24 bits ``m``."""
    n, w = positions.shape[0], contexts.shape[1]
    out = np.empty(n, np.float32)
    c0, c1 = np.empty(_LANES, np.uint32), np.empty(_LANES, np.uint32)
    c2, c3 = np.empty(_LANES, np.uint32), np.empty(_LANES, np.uint32)
    keys, tokens = np.empty(_LANES, np.uint32), np.empty(_LANES, np.uint32)
    for start in range(0, n, _LANES):
        m = min(_LANES, n - start)
        for j in range(m):
            c0[j], c1[j], c2[j], c3[j] = context_tag, np.uint32(w), np.uint32(0), np.uint32(0)
        for o in range(0, w, 4):
            for j in range(m):
                i = positions[start + j]
                # ids wrap to uint32 (-1 padding: 0xFFFFFFFF); past the width: 0xFFFFFFFF - lane
                c0[j] ^= np.uint32(np.uint64(contexts[i, o]) & _LOW)
                c1[j] ^= (
                    np.uint32(np.uint64(contexts[i, o + 1]) & _LOW)
                    if o + 1 < w
                    else np.uint32(0xFFFFFFFE)
                )
                c2[j] ^= (
                    np.uint32(np.uint64(contexts[i, o + 2]) & _LOW)
                    if o + 2 < w
                    else np.uint32(0xFFFFFFFD)
                )
                c3[j] ^= (
                    np.uint32(np.uint64(contexts[i, o + 3]) & _LOW)
                    if o + 3 < w
                    else np.uint32(0xFFFFFFFC)
                )
                keys[j] = np.uint32(k0 ^ np.uint32(o))
            _philox_lanes(c0, c1, c2, c3, keys, k1, m)
        for j in range(m):  # counter (token >> 2, s0, s1, s2), key (k0 ^ s3, k1 ^ TOKEN_TAG)
            t = np.uint32(np.uint64(ids[positions[start + j]]) & _LOW)
            tokens[j] = t
            keys[j] = np.uint32(k0 ^ c3[j])
            c3[j], c2[j], c1[j], c0[j] = c2[j], c1[j], c0[j], np.uint32(t >> np.uint32(2))
        _philox_lanes(c0, c1, c2, c3, keys, np.uint32(k1 ^ token_tag), m)
        for j in range(m):
            lane = tokens[j] & np.uint32(3)
            word = c0[j] if lane == 0 else (c1[j] if lane == 1 else (c2[j] if lane == 2 else c3[j]))
            out[start + j] = np.float32((np.float64(word >> np.uint32(8)) + 1.0) / 16777217.0)
    return out


def uniforms(
    key: int, contexts: NDArray[np.int64], ids: NDArray[np.int64], mask: NDArray[np.bool_]
) -> NDArray[np.float32]:
    """``prf.uniform(prf.uint32(key, contexts[mask], ids[mask]))`` without the gathers: the
    PRF of each scored row computed where it lies (``key`` checked by the caller)."""
    from detector.core import prf

    contexts = np.ascontiguousarray(contexts, np.int64)
    ids = np.ascontiguousarray(ids, np.int64)
    mask = np.ascontiguousarray(mask, np.bool_)
    if contexts.ndim != 2 or contexts.shape[1] < 1 or contexts.shape[0] != ids.shape[0]:
        raise ValueError("contexts must be [n, w] with w >= 1 and token_ids [n]")
    if mask.shape != ids.shape:
        raise ValueError("the mask needs one value per token")
    return _uniforms(  # type: ignore[no-any-return]
        contexts,
        ids,
        np.flatnonzero(mask),
        np.uint32(key & 0xFFFFFFFF),
        np.uint32(key >> 32),
        np.uint32(prf.CONTEXT_TAG),
        np.uint32(prf.TOKEN_TAG),
    )
