from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchmarks.dispersion import chunks, dispersion, flag_counts, genre_documents
from detector.core.contexts import COMPILED_FROM, build_contexts, dedup_mask
from detector.core.scoring import token_scores
from detector.decision.text import detect_text
from detector.evidence.detection import detect_ids
from detector.text import ngrams
from detector.text.ngrams import TABLE_DIR, NgramTable, build_table, gram_hashes, shipped_index
from detector.text.tokenizers import load_tokenizer


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


def test_look_ups_agree_with_a_set_of_context_token_tuples():
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 40, rng.integers(20, 200)) for _ in range(60)]  # small vocabulary
    table = build_table(docs, min_docs=3)
    seen: dict[tuple[int, ...], set[int]] = {}
    for d, ids in enumerate(docs):
        for row in map(tuple, np.column_stack([build_contexts(ids, 4), ids])):
            seen.setdefault(row, set()).add(d)
    common = {row for row, where in seen.items() if len(where) >= 3}
    for ids in [*docs[:10], rng.integers(0, 40, 500)]:
        want = [tuple(r) in common for r in np.column_stack([build_contexts(ids, 4), ids])]
        np.testing.assert_array_equal(table.common_mask(ids), want)


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
def tok():
    return load_tokenizer()


def test_the_embedded_tokenizer_ships_a_small_table(tok):
    table = tok.ngram_table
    assert table is not None and table.tokenizer_hash == tok.content_hash and table.width == 4
    entry = shipped_index()[tok.content_hash]
    assert (TABLE_DIR / entry["file"]).stat().st_size <= 8_000_000
    assert len(table) == entry["entries"] > 100_000
    boiler = tok.encode("Permission is hereby granted, free of charge, to any person obtaining")
    assert table.common_mask(boiler)[5:].all()
    rare = tok.encode("zebra quixotic marmalade Ouagadougou sesquipedalian flibbertigibbet")
    assert table.common_mask(rare).mean() < 0.2


def test_a_tokenizer_without_a_table_has_none():
    from detector.text.ngrams import table_for

    assert table_for("0" * 64) is None and table_for(None) is None


def test_detect_text_skips_common_pairs_and_keeps_vllms_statistic_beside(tok):
    text = "Permission is hereby granted, free of charge, to any person obtaining a copy " * 3
    found = detect_text(text, tok, [42]).hypotheses[0].detection
    plain = detect_text(text, tok, [42], common_ngrams=False).hypotheses[0].detection
    ids = tok.encode(text)
    assert found.num_common_tokens > 0
    assert found.num_scored_tokens + found.num_common_tokens == plain.num_scored_tokens
    assert (found.vllm_score, found.vllm_log10_p) == (plain.score, plain.log10_p)
    assert found.vllm_num_scored_tokens == plain.num_scored_tokens
    vllm = detect_ids(ids, 42)  # bare ids: no table, vLLM's detector exactly
    assert (vllm.score, vllm.num_scored_tokens, vllm.num_common_tokens) == (
        plain.score,
        plain.num_scored_tokens,
        0,
    )
    assert not (found.scored_mask & tok.ngram_table.common_mask(ids)).any()
    with_table = detect_ids(ids, 42, ngrams=tok.ngram_table)
    assert with_table.score == found.score and with_table.log10_p == found.log10_p


@pytest.fixture(scope="module")
def held_out(tok):
    docs = genre_documents(("prose", "code", "dpkg"))
    return {g: chunks([tok.encode(d) for d in found], 250, 500) for g, found in docs.items()}


def test_filtered_scores_stay_exponential_on_held_out_human_text(tok, held_out):
    table = tok.ngram_table
    for genre, test_chunks in held_out.items():
        scores = []
        for i, ids in enumerate(test_chunks[:150]):
            contexts = build_contexts(ids, 4)
            mask = dedup_mask(contexts) & ~table.common_mask(ids)
            scores.append(token_scores(1000 + i, contexts[mask], ids[mask]))
        assert stats.kstest(np.concatenate(scores), "expon").pvalue > 1e-3, genre


def test_the_filtered_decision_keeps_its_false_positive_rate_on_human_text(tok, held_out):
    keys = np.random.default_rng(11).integers(1, 2**63, 8)
    test_chunks = [c for g in held_out.values() for c in g[:150]]
    counts, scored = flag_counts(test_chunks, keys, tok.ngram_table)
    tests = len(keys) * len(test_chunks)
    # 1% of ~3,600 tests is 36; 60 is about 4 sd above it
    assert counts.sum() <= 0.01 * tests + 4 * np.sqrt(0.01 * tests)
    assert scored > 80


@pytest.mark.slow
def test_the_shipped_table_removes_the_per_key_dispersion_of_templated_text(tok, held_out):
    keys = np.random.default_rng(7).integers(1, 2**63, 60)
    test_chunks = held_out["dpkg"]
    counts, scored = flag_counts(test_chunks, keys, tok.ngram_table)
    assert scored > 60  # the filter leaves enough of each chunk to test
    assert dispersion(counts) <= 2.0
    assert counts.max() <= 0.03 * len(test_chunks)


def test_binary_search_and_hash_look_ups_agree(tok):
    """Short texts take the binary search, long ones the compiled pass and hash set: same
    answers, and the same with the caller's contexts passed in."""
    table = tok.ngram_table
    from benchmarks.corpus import english_prose

    ids = tok.encode(english_prose()[:200_000])
    assert ids.shape[0] > COMPILED_FROM
    long_mask = table.common_mask(ids)  # the compiled hashes and the hash set
    assert 0 < long_mask.sum() < ids.shape[0]
    assert np.array_equal(long_mask, table.searched(ngrams.fingerprints(ids, table.width)))
    for a, n in [(0, 50), (1_000, 300), (20_000, 1_500)]:
        part = ids[a : a + n]
        assert part.shape[0] < COMPILED_FROM
        short = table.common_mask(part)  # binary search
        # past the part's first ``width`` tokens (padded there), the same contexts as in the whole
        assert np.array_equal(short[table.width :], long_mask[a + table.width : a + n])
        assert np.array_equal(short, table.common_mask(part, build_contexts(part, table.width)))
    assert short.any()  # the 1,500-token part holds common pairs


def test_the_hash_set_answers_as_the_binary_search_on_random_fingerprints():
    rng = np.random.default_rng(3)
    values = np.unique(rng.integers(0, 2**32, 50_000, dtype=np.uint64).astype(np.uint32))
    for stored in (values, np.concatenate([[0, 2**32 - 1], values]).astype(np.uint32)):
        table = NgramTable(np.unique(stored))
        queries = np.concatenate(
            [
                table.hashes[::3],  # members
                rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32),  # mostly not
                np.array([0, 1, 2**32 - 1, 2**32 - 2], np.uint32),
            ]
        )
        queries = rng.permutation(queries)
        assert queries.shape[0] >= COMPILED_FROM
        got = table.contains(queries)
        assert np.array_equal(got, table.searched(queries))
        assert np.array_equal(got, np.isin(queries, table.hashes))
        assert got.sum() >= table.hashes[::3].shape[0]


def test_the_content_hash_names_the_skipped_pairs_not_the_build_notes(tmp_path):
    table = NgramTable(np.array([3, 9, 40], np.uint32), width=4, tokenizer_hash="t", meta={})
    table.save(tmp_path / "t.npz")
    again = NgramTable.load(tmp_path / "t.npz")
    noted = NgramTable(table.hashes, 4, "t", meta={"built": "another day"})
    assert again.content_hash == table.content_hash == noted.content_hash
    for other in (
        NgramTable(np.array([3, 9], np.uint32), 4, "t"),
        NgramTable(np.array([3, 9, 41], np.uint32), 4, "t"),
        NgramTable(table.hashes, 3, "t"),
        NgramTable(table.hashes, 4, "u"),
    ):
        assert other.content_hash != table.content_hash


def test_no_table_applies_to_a_key_of_another_width(tok):
    table = tok.ngram_table
    assert ngrams.applied_hash(table, table.width) == table.content_hash
    assert ngrams.applied_hash(table, table.width + 1) is None
    assert ngrams.applied_hash(None, 4) is None
