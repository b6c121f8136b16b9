"""bench_power's machinery on planted text (the spec's keyed argmax over a toy model), no vLLM."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from scipy import stats

from benchmarks.generations import cached_cell
from benchmarks.power import (
    MODEL_STATISTICS,
    PREFIXES,
    STATISTICS,
    Prepared,
    Sample,
    available,
    detection_rates,
    key_dispersion,
    lower_tail_log10_p,
    prepare,
    tail_count_log10_p,
)
from detector.evidence.detection import detect_ids
from tests.detector.planted import watermark_ids

KEY = 0x5EED_0F_BE_4C_11_AB_01
MODEL_FREE = [s for s in STATISTICS if s not in MODEL_STATISTICS]


@pytest.fixture(scope="module")
def marked():
    return prepare([watermark_ids(KEY, 200, seed=s) for s in range(4)])


@pytest.fixture(scope="module")
def human():
    from benchmarks.corpus import LICENSES
    from detector.text.tokenizers import load_tokenizer

    ids = load_tokenizer("default").encode((LICENSES / "GPL-3").read_text())
    return prepare([ids[i : i + 200] for i in range(0, 40 * 200, 200)])


def test_a_prefix_scores_what_detect_ids_scores_on_the_prefix_alone(human):
    text = human[3]
    for n in PREFIXES:
        alone = detect_ids(text.ids[:n], KEY)
        sample = Sample(text, n, KEY)
        np.testing.assert_array_equal(sample.scores, alone.token_scores[alone.scored_mask])


@pytest.mark.parametrize("statistic", MODEL_FREE)
def test_every_statistic_detects_planted_text_and_not_human_text(statistic, marked, human):
    assert detection_rates(marked, statistic, KEY)[200] == 1.0
    assert detection_rates(human, statistic, KEY)[200] <= 0.1


@pytest.mark.parametrize("statistic", MODEL_FREE)
def test_dispersion_counts_planted_text_only_under_its_own_key(statistic, marked):
    counts = key_dispersion(marked, statistic, [KEY, KEY + 1, KEY + 2])
    assert counts[0] == len(marked)
    assert counts[1:].sum() <= 1


@pytest.mark.parametrize("statistic", sorted(MODEL_STATISTICS))
def test_model_statistics_apply_only_where_a_model_read_every_text(statistic, marked, human):
    pytest.importorskip("detector.reading.model")
    assert statistic not in available(marked)
    from detector.reading.model import ModelReading

    # E[s] = f(q_x) = 2 everywhere: every weight is 1 and the weighted test is the Gamma test.
    def reading(n: int) -> ModelReading:
        return ModelReading(np.full(n, 2.0), np.full(n, 2.0))

    read = prepare([t.ids for t in marked], [reading(t.ids.size) for t in marked])
    assert statistic in available(read)
    assert detection_rates(read, statistic, KEY)[200] == 1.0
    plain = prepare([t.ids for t in human], [reading(t.ids.size) for t in human])
    assert detection_rates(plain, statistic, KEY)[200] <= 0.1


def test_a_cached_cell_is_made_once_and_remade_when_its_spec_changes(tmp_path):
    made = []

    def make(backend):
        made.append(backend)
        return {"token_ids": [[1, 2, 3]]}

    path = tmp_path / "cell.json"
    for spec in ({"t": 1.0}, {"t": 1.0}, {"t": 0.7}):
        got = cached_cell(path, spec, make, engine=lambda: nullcontext("engine"))
        assert got["token_ids"] == [[1, 2, 3]] and got["spec"] == spec
    assert made == ["engine", "engine"]


def _null_samples(count: int, n: int, seed: int) -> list[Sample]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        text = Prepared(np.zeros(n, np.int64), np.zeros((n, 4), np.int64), np.ones(n, bool))
        text._scores[KEY] = rng.exponential(size=n)
        out.append(Sample(text, n, KEY))
    return out


def test_the_model_free_p_values_hold_their_size_under_the_null():
    samples = _null_samples(3000, 100, seed=5)
    lower = np.array([10 ** lower_tail_log10_p(s) for s in samples])
    assert stats.kstest(lower, "uniform").pvalue > 1e-3
    count = np.array([10 ** tail_count_log10_p(s) for s in samples])
    assert (count <= 0.05).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 3000)
