"""Compiled (Numba) passes behind the detector's masks on long texts.

- ``gram_hashes``: every position's keyless context hash and its n-gram fingerprint
  (``detector.text.ngrams.fingerprints``: the context hash mixed with the token) in one loop.
- ``dedup_mask``: ``detector.core.contexts.dedup_mask`` through an open-addressing hash set
  of contexts keyed by those hashes; rows that share a hash tag are compared in full, so the
  mask is exact for any width, any ids and any ``max_history``.
- ``HashSet``: an n-gram table's fingerprints in an open-addressing set, built once per
  table, O(1) a look-up.

Each answers exactly what the numpy code it stands in for answers (pinned by tests on random
and real texts): it only avoids that code's temporaries, sorts and per-call set-up. Imported
on first use by long texts (importing Numba costs ~0.3 s a process); compiled once, cached.
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
