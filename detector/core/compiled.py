"""Compiled (Numba) passes behind the detector's masks and span scan on long texts.

- ``scored_masks``: the de-duplicated and the scored positions of a text in one sweep from
  its ids: each position's keyless context hash keys an open-addressing set of contexts
  (rows that share a hash tag are compared in full, so the mask is exact for any width, any
  ids and any ``max_history``) and, where the context is fresh, its n-gram fingerprint
  (``detector.text.ngrams.fingerprints``) is looked up in the table.
- ``HashSet``: an n-gram table's fingerprints in an open-addressing set behind a Bloom
  prefilter, built once per table, O(1) a look-up.
- ``gram_hashes``, ``context_hashes``, ``dedup_mask``: the same hashes and de-duplication
  for callers holding a context array (``detector.core.contexts.dedup_mask``).
- ``coarse_scan``: the span scan's coarse pass over one long text.

The keyed PRF of long inputs is compiled beside, in ``detector.core.compiled_prf``. Each
answers exactly what the numpy code it stands in for answers (pinned by tests on random and
real texts): it only avoids that code's temporaries, sorts and per-call set-up. Imported on
first use by a text of ``detector.core.contexts.COMPILED_FROM`` tokens or more: importing
Numba and loading the cached machine code cost ~0.9 s of CPU once a process (a first
compile, where no cache exists yet, ~8 s).
"""

from __future__ import annotations

import threading
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
    """Open-addressing set of uint32 ``values`` (load at most 1/2: the shipped table's 841 K
    fingerprints take 8 MB, which a cache shared with the tokenizer keeps better than 16). 0
    marks an empty slot, so whether 0 itself is a member is returned beside. The values are
    uniform hashes already, so their low bits index the slots."""
    size = 16
    while size < 2 * values.shape[0]:
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


_FILTER_SEED = np.uint64(0x9E3779B97F4A7C15)
_FILTER_KEYS_PER_WORD = 8  # ~8 bits a key: 3 probe bits give ~2.5% false hits at 841 K keys
_SIX = np.uint64(6)
_BITS = np.uint64(63)


@_njit
def _filter_bits(x, words_log2):  # type: ignore[no-untyped-def]
    """(word, three-bit mask) of uint32 ``x`` in the prefilter."""
    y = _mix(np.uint64(x) + _FILTER_SEED)
    word = np.int64(y >> np.uint64(64 - words_log2))
    bits = (
        (np.uint64(1) << (y & _BITS))
        | (np.uint64(1) << ((y >> _SIX) & _BITS))
        | (np.uint64(1) << ((y >> np.uint64(12)) & _BITS))
    )
    return word, bits


@_njit
def _build_filter(values, words_log2):  # type: ignore[no-untyped-def]
    """A Bloom filter over ``values`` blocked in 64-bit words: one word a key, three bits."""
    words = np.zeros(np.int64(1) << words_log2, np.uint64)
    for x in values:
        word, bits = _filter_bits(x, words_log2)
        words[word] |= bits
    return words


@_njit
def _member(x, slots, zero, words, words_log2):  # type: ignore[no-untyped-def]
    """Whether ``x`` is in the set: the prefilter (one word, an eighth of the table's size,
    which stays in the cache) turns most non-members away; the table answers the rest."""
    word, bits = _filter_bits(x, words_log2)
    if words[word] & bits != bits:
        return False
    if x == 0:
        return zero
    mask = np.uint32(slots.shape[0] - 1)
    k = x & mask
    while True:
        y = slots[k]
        if y == x:
            return True
        if y == 0:
            return False
        k = (k + np.uint32(1)) & mask


@_njit
def _members(values, slots, zero, words, words_log2):  # type: ignore[no-untyped-def]
    out = np.zeros(values.shape[0], np.bool_)
    for i in range(values.shape[0]):
        out[i] = _member(values[i], slots, zero, words, words_log2)
    return out


@_njit
def _same_context(ids, a, b, width):  # type: ignore[no-untyped-def]
    """Whether positions ``a`` and ``b`` of ``ids`` have the same context (-1 padding)."""
    for j in range(width):
        ka, kb = a - width + j, b - width + j
        va = ids[ka] if ka >= 0 else -1
        vb = ids[kb] if kb >= 0 else -1
        if va != vb:
            return False
    return True


_BLOCK = 512  # positions per block of ``_scored``'s passes


@_njit
def _set_size(n):  # type: ignore[no-untyped-def]
    """Slots of the de-duplication set of ``n`` rows: a power of two, load at most 1/2."""
    size = 16
    while size < 2 * n:
        size <<= 1
    return size


@_njit
def _scored(ids, width, deduplicate, max_history, table, use_table, seen):  # type: ignore[no-untyped-def]
    """(de-duplicated, scored) masks of ``ids`` in one sweep, straight from the ids: each
    position's context hash keys the de-duplication set (as ``_dedup``, rows compared in full
    where hash tags meet) and, where the context is fresh, its n-gram fingerprint is looked up
    in the table (``table``: ``HashSet.parts``; ``use_table`` False: no table).
    ``seen``: room for the set (``_set_size(n)`` uint32 slots or more, any content). Texts of
    up to 2**31 - 1 tokens; the fewer bits a position needs, the more tag bits tell rows apart
    before they are compared (13 at 262 K tokens).

    Block by block: the hashes of a block go to a small buffer, then the set's probes, then the
    table's look-ups run as loops of their own. A look-up misses the cache (the table is 8 MB),
    and a loop of independent look-ups keeps many misses in flight where one loop doing it all
    waits for each (4x slower here)."""
    n = ids.shape[0]
    slots, zero, words, words_log2 = table
    dedup = np.ones(n, np.bool_)
    scored = np.ones(n, np.bool_)
    size = _set_size(n) if deduplicate else 1
    seen[:size] = 0
    mask = np.uint64(size - 1)
    # A slot: the hash's top bits (a tag) above the row's position plus one (0: empty).
    pos_bits = np.uint64(1)
    while (np.uint64(1) << pos_bits) <= np.uint64(n):
        pos_bits += np.uint64(1)
    low = (np.uint64(1) << pos_bits) - np.uint64(1)
    tag_shift = np.uint64(64) - (np.uint64(32) - pos_bits)  # the tag: the hash's top bits
    hashes = np.empty(_BLOCK, np.uint64)
    grams = np.empty(_BLOCK, np.uint32)
    for block in range(0, n, _BLOCK):
        stop = min(n, block + _BLOCK)
        # _context_hash of each position, column by column: the positions' mixes are
        # independent, so the loop over them vectorizes
        for i in range(block, stop):
            hashes[i - block] = np.uint64(width)
        for j in range(width):
            for i in range(block, stop):
                k = i - width + j
                v = np.uint64(ids[k] + 1) if k >= 0 else np.uint64(0)
                hashes[i - block] = _mix(hashes[i - block] ^ v)
        if deduplicate:
            for i in range(block, stop):
                h = hashes[i - block]
                tag = (h >> tag_shift) << pos_bits if pos_bits < 32 else np.uint64(0)
                s = h & mask
                while True:
                    e = np.uint64(seen[s])
                    if e == 0:
                        break
                    if (e & ~low) == tag:
                        last = np.int64(e & low) - 1
                        if _same_context(ids, last, i, width):
                            dedup[i] = max_history >= 0 and i - last > max_history
                            break
                    s = (s + np.uint64(1)) & mask
                seen[s] = np.uint32(tag | np.uint64(i + 1))
        if use_table:
            for i in range(block, stop):
                grams[i - block] = np.uint32(
                    _mix(hashes[i - block] ^ (np.uint64(ids[i]) + _TOKEN_TAG)) >> _S32
                )
            for i in range(block, stop):
                common = _member(grams[i - block], slots, zero, words, words_log2)
                scored[i] = dedup[i] & (not common)
        else:
            for i in range(block, stop):
                scored[i] = dedup[i]
    return dedup, scored


class HashSet:
    """A set of uint32 values (an n-gram table's fingerprints), built once, O(1) look-ups."""

    def __init__(self, values: NDArray[np.uint32]):
        values = np.ascontiguousarray(values, np.uint32)
        slots, zero = _build_set(values)
        words_log2 = 1
        while (1 << words_log2) * _FILTER_KEYS_PER_WORD < values.shape[0]:
            words_log2 += 1
        # The compiled passes take the set as one tuple: (slots, zero, filter, log2 words).
        self.parts = (slots, bool(zero), _build_filter(values, words_log2), words_log2)

    def contains(self, values: NDArray[np.uint32]) -> NDArray[np.bool_]:
        """True where ``values[i]`` is in the set."""
        return _members(np.ascontiguousarray(values, np.uint32), *self.parts)  # type: ignore[no-any-return]


_NO_SET = HashSet(np.zeros(0, np.uint32))


def scored_masks(
    ids: NDArray[np.int64],
    width: int,
    *,
    deduplicate: bool = True,
    max_history: int | None = None,
    table: HashSet | None = None,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(de-duplicated, scored) positions of ``ids`` at context ``width`` in one pass, with no
    context array: ``dedup_mask(build_contexts(ids, width), max_history)`` (all True without
    ``deduplicate``) and that mask minus the positions whose n-gram fingerprint is in
    ``table`` (``detector.text.ngrams.fingerprints``)."""
    if width < 1:
        raise ValueError("context width must be at least 1")
    ids = np.ascontiguousarray(ids, np.int64)
    return _scored(  # type: ignore[no-any-return]
        ids,
        int(width),
        bool(deduplicate),
        -1 if max_history is None else int(max_history),
        (_NO_SET if table is None else table).parts,
        table is not None,
        _scratch(_set_size(ids.shape[0]) if deduplicate else 1),
    )


_SCRATCH_KEPT = 1 << 22  # slots (16 MB) a thread keeps between calls; larger sets are dropped
_scratch_of = threading.local()


def _scratch(size: int) -> NDArray[np.uint32]:
    """``size`` uint32 slots of this thread's scratch: the pass runs once a text and a fresh
    2 MB set is one more large allocation, so a thread keeps the room it last needed (up to
    ``_SCRATCH_KEPT`` slots)."""
    kept = getattr(_scratch_of, "room", None)
    if kept is not None and kept.shape[0] >= size:
        return kept[:size]  # type: ignore[no-any-return]
    room = np.empty(size, np.uint32)
    if size <= _SCRATCH_KEPT:
        _scratch_of.room = room
    return room


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


# --- the span scan's coarse pass (``detector.evidence.scan``) over one long text ---------


@_njit
def _coarse_scan(cum, lengths, stride_fraction):  # type: ignore[no-untyped-def]
    """For each window length ``L`` of ``lengths``: the best sum ``cum[s + L] - cum[s]`` over
    the starts ``s = 0, L // stride_fraction, ...`` (the step at least 1) and the last start
    ``n - L``, and the first start that reaches it; ``n = len(cum) - 1``."""
    n = cum.shape[0] - 1
    best = np.empty(lengths.shape[0], np.float64)
    where = np.empty(lengths.shape[0], np.int64)
    for k in range(lengths.shape[0]):
        length = lengths[k]
        step = max(1, length // stride_fraction)
        top, at = cum[length] - cum[0], 0
        s = step
        while s <= n - length:
            v = cum[s + length] - cum[s]
            if v > top:
                top, at = v, s
            s += step
        last = n - length
        if last % step != 0:  # the family's extra last start
            v = cum[last + length] - cum[last]
            if v > top:
                top, at = v, last
        best[k], where[k] = top, at
    return best, where


def coarse_scan(
    cum: NDArray[np.float64], lengths: NDArray[np.int64], stride_fraction: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(best window sum, its first start) per length of the scan's coarse family over the
    prefix sums ``cum``: what ``detector.evidence.scan`` finds with the family's arrays, in
    one loop and no array of windows (~2.5 windows a token)."""
    return _coarse_scan(  # type: ignore[no-any-return]
        np.ascontiguousarray(cum, np.float64),
        np.ascontiguousarray(lengths, np.int64),
        int(stride_fraction),
    )
