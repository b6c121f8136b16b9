"""bench_public's machinery on a small run: the product's public decision against families of
random keys in memory, on the human corpora and the catalogs, and on marked text."""

from __future__ import annotations

import re

import pytest
from scipy import stats

from benchmarks.bench_public import Rate, catalog_chunks, family, marked_ids, measure
from detector.text.tokenizers import load_tokenizer
from provenance.public.services import WATERMARKED, decisions

KEYS = [0x9E37_79B9_7F4A_7C15, 0xBF58_476D_1CE4_E5B9, 0x94D0_49BB_1331_11EB]
THRESHOLD = 0.01
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def test_a_rate_carries_its_exact_interval():
    rate = Rate(3, 40)
    low, high = rate.interval
    # Clopper-Pearson from the beta quantiles
    assert low == pytest.approx(stats.beta.ppf(0.025, 3, 38))
    assert high == pytest.approx(stats.beta.ppf(0.975, 4, 37))
    assert rate.rate == 3 / 40 and Rate(0, 10).interval[0] == 0.0


@pytest.mark.parametrize("language", ["ja", "ko", "zh_Hans"])
def test_the_catalogs_give_chunks_of_their_language(language):
    loaded = load_tokenizer("default")
    chunks = catalog_chunks(loaded, language, 5, 100)
    assert len(chunks) == 5 and len(set(chunks)) == 5
    for chunk in chunks:
        assert CJK.search(chunk)
        assert abs(len(loaded.encode(chunk)) - 100) <= 2  # decoded text tokenizes back


def test_a_family_names_the_key_that_marked_the_text():
    loaded = load_tokenizer("default")
    groups = family(KEYS, loaded)
    texts = [loaded.decode(marked_ids(KEYS[i], 64, seed=i)) for i in range(3)]
    found = decisions(texts, groups, threshold=THRESHOLD)
    assert [(d.verdict, d.model) for d in found] == [(WATERMARKED, f"Model {i}") for i in range(3)]
    assert all(d.strength is not None and d.strength < -2 for d in found)


@pytest.mark.slow
def test_a_small_run_keeps_the_false_positive_bound_and_measures_power():
    found = measure(families=(1, 3), draws=2, chunks=30, lengths=(16, 64), marked=15, seed=5)
    assert found["threshold"] == THRESHOLD  # the product's default
    assert set(found["corpora"]) >= {"prose", "code", "templated", "catalog-ja"}
    for m in (1, 3):
        fp = found[m]["false_positive"]
        assert fp.n == 2 * sum(found["corpora"].values())
        assert fp.interval[0] <= THRESHOLD  # consistent with a family-wise rate <= 1%
        assert found[m]["power"][64].rate >= 0.95
        assert 0.0 <= found[m]["inconclusive"].rate <= 1.0
