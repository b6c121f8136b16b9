"""A deliberately simple scalar PRF, written straight from the spec, to pin
``detector.core.prf``."""

from __future__ import annotations

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, ...]:
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(10):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK)
        if r < 9:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    return c0, c1, c2, c3


def prf_word(key: int, context: list[int], token: int) -> int:
    key = int(key)
    k0, k1 = key & MASK, key >> 32
    ctx = [int(c) & MASK for c in context]  # Python ints: numpy scalars would overflow
    w = len(ctx)
    state = (0x574D4358, w, 0, 0)
    for o in range(0, w, 4):
        block = [ctx[o + i] if o + i < w else MASK - i for i in range(4)]
        state = philox(tuple(s ^ b for s, b in zip(state, block, strict=True)), (k0 ^ o, k1))
    t = int(token) & MASK
    s0, s1, s2, s3 = state
    out = philox((t >> 2, s0, s1, s2), (k0 ^ s3, k1 ^ 0x574D544B))
    return out[t & 3]


def uniform(word: int) -> float:
    import numpy as np

    return float(np.float32(((word >> 8) + 1) / (2**24 + 1)))
