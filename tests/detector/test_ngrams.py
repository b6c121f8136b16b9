from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchmarks.dispersion import DPKG_STATUS, chunks, dispersion, flag_counts, split
from detector.contexts import build_contexts, dedup_mask
from detector.ngrams import NgramTable, build_table, gram_hashes
from detector.scoring import token_scores
from detector.tokenizers import load_tokenizer


def test_equal_pairs_hash_equal_and_any_change_hashes_apart():
    ids = np.array([5, 6, 7, 8, 9, 5, 6, 7, 8, 9], np.int64)
    h = gram_hashes(ids, 4)
    assert h[9] == h[4]  # same context (5, 6, 7, 8) and token 9
    assert h[5] != h[0]  # same token, different context (padding vs 6, 7, 8, 9)
    other = ids.copy()
    other[9] = 10
    assert gram_hashes(other, 4)[9] != h[9]
    assert gram_hashes(ids, 3)[9] != h[9]  # the width is part of the pair


def test_a_table_holds_the_pairs_seen_in_enough_documents():
    a = np.array([1, 2, 3, 4, 5, 6], np.int64)
    b = np.array([9, 1, 2, 3, 4, 5, 7], np.int64)  # shares (1, 2, 3, 4) -> 5 with a
    table = build_table([a, b, a], min_docs=2)  # a counts once per document, and twice here
    mask = table.common_mask(b)
    assert mask[5] and not mask[6]
    assert table.common_mask(a).all()  # every pair of a is in two documents
    assert not build_table([a, b], min_docs=3).common_mask(b).any()


def test_a_table_survives_a_round_trip_through_a_file(tmp_path):
    table = build_table([np.arange(50), np.arange(50)], width=2, tokenizer_hash="abc")
    table.save(tmp_path / "t.npz")
    again = NgramTable.load(tmp_path / "t.npz")
    assert again.width == 2 and again.tokenizer_hash == "abc"
    np.testing.assert_array_equal(again.hashes, table.hashes)


def test_it_rejects_a_document_count_below_one():
    with pytest.raises(ValueError):
        build_table([np.arange(5)], min_docs=0)


@pytest.fixture(scope="module")
def templated():
    if not DPKG_STATUS.exists():
        pytest.skip("no dpkg status file on this machine")
    tok = load_tokenizer()
    stanzas = [s for s in DPKG_STATUS.read_text(errors="replace").split("\n\n") if s.strip()]
    docs = [tok.encode("\n\n".join(stanzas[i : i + 5])) for i in range(0, len(stanzas), 5)]
    train, test = split(docs)
    return build_table(train, min_docs=2), chunks(test, 250, 400)


def test_filtered_scores_stay_exponential_on_human_text(templated):
    table, test_chunks = templated
    scores = []
    for i, ids in enumerate(test_chunks[:200]):
        contexts = build_contexts(ids, 4)
        mask = dedup_mask(contexts) & ~table.common_mask(ids)
        scores.append(token_scores(1000 + i, contexts[mask], ids[mask]))
    assert stats.kstest(np.concatenate(scores), "expon").pvalue > 1e-3


@pytest.mark.slow
def test_the_filter_removes_the_per_key_dispersion_of_templated_text(templated):
    table, test_chunks = templated
    keys = np.random.default_rng(7).integers(1, 2**63, 80)
    counts, scored = flag_counts(test_chunks, keys, table)
    assert scored > 60  # the filter leaves enough of each chunk to test
    assert dispersion(counts) <= 2.0
