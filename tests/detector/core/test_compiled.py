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


@pytest.mark.parametrize("width", [1, 3, 4, 6])
@pytest.mark.parametrize("max_history", [None, 1, 7, 300])
@pytest.mark.parametrize("high", [5, 1_000, 2**32])
def test_the_one_pass_masks_are_the_dedup_and_the_table_look_up(width, max_history, high):
    """``scored_masks`` (hashes, de-duplication set and table look-ups in one sweep from the
    ids) answers the sorted de-duplication and, minus the table's pairs, the binary search."""
    ids = repetitive(width * 5 + (max_history or 0), 9_000, high)
    ctx = build_contexts(ids, width)
    want = sorted_dedup(ctx, max_history)
    grams = ngrams.fingerprints(ids, width)
    rng = np.random.default_rng(width)
    table = ngrams.NgramTable(
        np.unique(np.concatenate([grams[rng.random(grams.shape[0]) < 0.3], [0]])), width
    )
    common = table.searched(grams)
    assert 0 < common.sum() < ids.shape[0]
    dedup, scored = compiled.scored_masks(ids, width, max_history=max_history)
    assert np.array_equal(dedup, want) and np.array_equal(scored, want)
    dedup, scored = compiled.scored_masks(ids, width, max_history=max_history, table=table.hash_set)
    assert np.array_equal(dedup, want) and np.array_equal(scored, want & ~common)
    dedup, scored = compiled.scored_masks(ids, width, deduplicate=False, table=table.hash_set)
    assert dedup.all() and np.array_equal(scored, ~common)


def test_the_masks_hold_with_the_threads_scratch_left_dirty():
    """The de-duplication set's room is kept between calls: a long text's slots, left behind,
    must not leak into a shorter text's masks (and 0, a fingerprint like any other, is
    found where the table holds it)."""
    long_ids = repetitive(3, 30_000, 60)
    compiled.scored_masks(long_ids, 4)
    for seed in range(3):
        ids = repetitive(seed, 3_000 + 1_000 * seed, 40)
        want = sorted_dedup(build_contexts(ids, 4))
        assert np.array_equal(compiled.scored_masks(ids, 4)[0], want)
    values = np.array([0, 5, 2**32 - 1], np.uint32)
    found = compiled.HashSet(values).contains(np.array([0, 1, 5, 7, 2**32 - 1], np.uint32))
    assert found.tolist() == [True, False, True, False, True]
    assert not compiled.HashSet(values[1:]).contains(np.zeros(1, np.uint32))[0]


def test_the_prefiltered_set_answers_exact_membership():
    """The Bloom prefilter only turns values away: every member is found and no non-member
    is, against the sorted array's binary search."""
    rng = np.random.default_rng(4)
    members = np.unique(rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32))
    probes = np.concatenate([members[::3], rng.integers(0, 2**32, 300_000).astype(np.uint32)])
    at = np.minimum(np.searchsorted(members, probes), members.shape[0] - 1)
    assert np.array_equal(compiled.HashSet(members).contains(probes), members[at] == probes)
