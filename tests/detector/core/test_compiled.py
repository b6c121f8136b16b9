"""The compiled passes answer exactly what the numpy code they stand in for answers."""

from __future__ import annotations

import numpy as np
import pytest

from detector.core import compiled
from detector.core.contexts import COMPILED_FROM, build_contexts, dedup_mask, sorted_dedup
from detector.text import ngrams


def repetitive(seed: int, n: int, high: int) -> np.ndarray:
    """Random ids with copied passages, a periodic run and a constant one (repeated contexts at
    every distance)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, high, n)
    for _ in range(20):
        a, b, m = rng.integers(0, n - 300, 3)
        ids[b : b + m % 300] = ids[a : a + m % 300]
    start = int(rng.integers(0, n - 200))
    ids[start : start + 200] = np.tile(rng.integers(0, high, 7), 30)[:200]
    ids[-60:] = ids[-61]  # a run of one id: its contexts repeat at distance 1
    return ids


@pytest.mark.parametrize("width", [1, 2, 4, 5, 9])
@pytest.mark.parametrize("high", [3, 50_000, 2**32])
def test_hashes_are_the_numpy_fingerprints_and_context_hashes(width, high):
    ids = repetitive(width, 5_000, high)
    context, gram = compiled.gram_hashes(ids, width)
    assert np.array_equal(gram, ngrams.fingerprints(ids, width))
    assert np.array_equal(context, compiled.context_hashes(build_contexts(ids, width)))


@pytest.mark.parametrize("width", [1, 3, 4, 6])
@pytest.mark.parametrize("max_history", [None, 1, 7, 300, 8192])
@pytest.mark.parametrize("high", [5, 1_000, 2**32])
def test_the_hashed_dedup_is_the_sorted_one(width, max_history, high):
    ids = repetitive(width * 7 + (max_history or 0), 12_000, high)
    ctx = build_contexts(ids, width)
    want = sorted_dedup(ctx, max_history)
    assert np.array_equal(compiled.dedup_mask(ctx, max_history), want)
    assert np.array_equal(dedup_mask(ctx, max_history), want)  # the public path takes it
    assert ctx.shape[0] >= COMPILED_FROM
    context, _ = compiled.gram_hashes(ids, width)
    assert np.array_equal(compiled.dedup_mask(ctx, max_history, context), want)
    assert 0 < want.sum() < ids.shape[0]


@pytest.mark.parametrize("max_history", [None, 2, 50])
def test_rows_that_share_a_hash_are_told_apart_by_their_ids(max_history):
    """With every hash equal, every look-up lands in one probe chain and the row comparison
    alone decides: the mask must not change."""
    ids = repetitive(11, 3_000, 40)
    ctx = build_contexts(ids, 3)
    same = np.zeros(ids.shape[0], np.uint64)
    assert np.array_equal(
        compiled.dedup_mask(ctx, max_history, same), sorted_dedup(ctx, max_history)
    )


def test_empty_and_tiny_inputs():
    for n in (0, 1, 2):
        ctx = build_contexts(np.arange(n), 4)
        assert np.array_equal(compiled.dedup_mask(ctx), sorted_dedup(ctx))
        context, gram = compiled.gram_hashes(np.arange(n, dtype=np.int64), 4)
        assert context.shape == gram.shape == (n,)
    assert (
        compiled.HashSet(np.zeros(0, np.uint32)).contains(np.arange(3, dtype=np.uint32)).sum() == 0
    )
