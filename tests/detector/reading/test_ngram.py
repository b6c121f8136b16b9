"""The reading without a model (detector.reading.ngram): its trigram model is a distribution
after every context, it weighs a token it finds certain little and suspects no edits, and the
weighted test keeps its size with it on human text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.evidence.detection import detect_ids
from detector.evidence.weighted import SUSPECT_SCORE
from detector.reading.ngram import FLOOR, NgramReading, count_ngrams

V = 40


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> NgramReading:
    """Counts of 200 random documents over a 40-token vocabulary, with a fixed phrase
    (7, 8, 9) in each, so that 9 after (7, 8) is nearly certain."""
    rng = np.random.default_rng(1)
    docs = []
    for _ in range(200):
        d = rng.integers(0, V, 30)
        d[10:13] = (7, 8, 9)
        docs.append(d)
    path = tmp_path_factory.mktemp("ngram") / "counts.npz"
    np.savez(path, **count_ngrams(docs, V))
    return NgramReading(path)


@pytest.mark.parametrize("context", [(7, 8), (3, 5), (39, 0)])
def test_the_ngram_probabilities_are_a_distribution_after_every_context(
    toy: NgramReading, context: tuple[int, int]
) -> None:
    q = [toy.probabilities([*context, x])[2] for x in range(V)]
    assert sum(q) == pytest.approx(1.0, abs=1e-9)
    assert min(q) > 0


def test_the_ngram_reading_weighs_a_token_it_finds_certain_little(toy: NgramReading) -> None:
    """9 after (7, 8): observed score near 1 (weight near 0); a random token: above it,
    never a suspected edit (the floor)."""
    (r,) = toy.read([np.array([7, 8, 9, 21, 3], np.int64)])
    assert r.observed[2] < 1.2
    assert r.observed[3] > 2.0
    assert r.observed.max() < SUSPECT_SCORE
    assert FLOOR > 0 and np.all(r.expected >= 1.0)


def test_the_ngram_reading_refuses_ids_outside_its_vocabulary(toy: NgramReading) -> None:
    with pytest.raises(ValueError, match="token ids"):
        toy.read([np.array([1, V], np.int64)])
    with pytest.raises(ValueError, match="temperature"):
        toy.read([np.array([1, 2], np.int64)], temperature=0.0)


def test_the_weighted_test_keeps_its_size_with_the_ngram_reading() -> None:
    """400 tests (20 human chunks of 60 tokens x 20 random keys) with weights from a trigram
    model counted from other human text (standard-library docstrings, the chunks being
    its code): the weighted p-values pass a KS test against U(0, 1), and at 10% the rate
    stays under alpha + 3 sd."""
    from scipy import stats

    from benchmarks.bench_assist import human_chunks
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    text = english_prose(300_000)
    docs = [tok.encode(text[i : i + 3000]) for i in range(0, len(text), 3000)]
    reading = NgramReading.from_counts(count_ngrams(docs, tok.vocab_size))
    chunks = human_chunks("code", 20, 60)
    readings = reading.read(chunks)
    keys = np.random.default_rng(9).integers(0, 2**63, 20)
    p = np.array(
        [
            detect_ids(
                ids, int(k), expected_scores=r.expected, observed_scores=r.observed
            ).weighted.p_value  # type: ignore[union-attr]
            for ids, r in zip(chunks, readings, strict=True)
            for k in keys
        ]
    )
    assert p.size == 400
    assert stats.kstest(p, "uniform").pvalue > 1e-3
    assert (p <= 0.1).mean() <= 0.1 + 3 * math.sqrt(0.09 / p.size)
