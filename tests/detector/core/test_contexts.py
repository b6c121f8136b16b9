from __future__ import annotations

import numpy as np
import pytest

from detector.core.contexts import build_contexts, dedup_mask


def naive_first_occurrence(tokens, width, max_history=None):
    history: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    mask = []
    prefix = [-1] * width
    for t in tokens:
        ctx = tuple(prefix[-width:])
        mask.append(ctx not in (seen if max_history is None else history[-max_history:]))
        history.append(ctx)
        seen.add(ctx)
        prefix.append(int(t))
    return np.array(mask)


def test_contexts_are_the_preceding_tokens_left_padded_with_minus_one():
    ctx = build_contexts([10, 11, 12, 13, 14], 4)
    assert ctx.tolist() == [
        [-1, -1, -1, -1],
        [-1, -1, -1, 10],
        [-1, -1, 10, 11],
        [-1, 10, 11, 12],
        [10, 11, 12, 13],
    ]
    assert build_contexts([], 4).shape == (0, 4)


def test_a_repeated_sequence_is_scored_only_on_its_first_pass():
    tokens = list(range(100, 150)) * 3
    mask = dedup_mask(build_contexts(tokens, 4))
    # the first pass, plus the 4 positions whose contexts straddle the first wrap-around
    assert mask[:50].all()
    assert mask[50:54].all() and not mask[54:].any()


@pytest.mark.parametrize("period", [1, 2, 3, 7])
def test_periodic_sequences_score_each_distinct_context_once(period):
    tokens = [5 + (i % period) for i in range(200)]
    ctx = build_contexts(tokens, 4)
    mask = dedup_mask(ctx)
    distinct = {tuple(row) for row in ctx}
    assert mask.sum() == len(distinct)
    assert np.array_equal(mask, naive_first_occurrence(tokens, 4))


def test_dedup_matches_a_naive_scan_on_random_repetitive_text():
    rng = np.random.default_rng(0)
    for width in (1, 2, 4, 5):
        tokens = rng.integers(0, 4, size=400)  # tiny vocabulary: many repeats
        assert np.array_equal(
            dedup_mask(build_contexts(tokens, width)), naive_first_occurrence(tokens, width)
        )


def test_bounded_history_forgets_contexts_older_than_the_window():
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 3, size=300)
    ctx = build_contexts(tokens, 2)
    for window in (1, 5, 40):
        assert np.array_equal(dedup_mask(ctx, window), naive_first_occurrence(tokens, 2, window))


def test_it_rejects_bad_token_ids_and_widths():
    with pytest.raises(ValueError):
        build_contexts([1, -2, 3], 4)
    with pytest.raises(ValueError):
        build_contexts([1, 2**32], 4)
    with pytest.raises(ValueError):
        build_contexts([1.5, 2.0], 4)
    with pytest.raises(ValueError):
        build_contexts([1, 2], 0)
    with pytest.raises(ValueError):
        dedup_mask(build_contexts([1, 2], 2), 0)


@pytest.mark.parametrize("high", [50, 2**20])  # packed-and-hashed keys; byte-string keys
def test_long_texts_take_the_fast_paths_and_still_match_the_naive_scan(high):
    rng = np.random.default_rng(high)
    tokens = rng.integers(0, high, size=12000)
    tokens[6000:6500] = tokens[100:600]  # a copied passage
    assert np.array_equal(dedup_mask(build_contexts(tokens, 3)), naive_first_occurrence(tokens, 3))
