"""bench_power's machinery on planted text (the spec's keyed argmax over a toy model), no vLLM."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

from benchmarks.generations import cached_cell
from benchmarks.power import (
    PREFIXES,
    STATISTICS,
    Sample,
    detection_rates,
    key_dispersion,
    prepare,
)
from detector.detect import detect_ids
from tests.detector.planted import watermark_ids

KEY = 0x5EED_0F_BE_4C_11_AB_01


@pytest.fixture(scope="module")
def marked():
    return prepare([watermark_ids(KEY, 200, seed=s) for s in range(4)])


@pytest.fixture(scope="module")
def human():
    from benchmarks.corpus import LICENSES
    from detector.tokenizers import load_tokenizer

    ids = load_tokenizer("default").encode((LICENSES / "GPL-3").read_text())
    return prepare([ids[i : i + 200] for i in range(0, 40 * 200, 200)])


def test_a_prefix_scores_what_detect_ids_scores_on_the_prefix_alone(human):
    text = human[3]
    for n in PREFIXES:
        alone = detect_ids(text.ids[:n], KEY)
        sample = Sample(text, n, KEY)
        np.testing.assert_array_equal(sample.scores, alone.token_scores[alone.scored_mask])


@pytest.mark.parametrize("statistic", list(STATISTICS))
def test_every_statistic_detects_planted_text_and_not_human_text(statistic, marked, human):
    assert detection_rates(marked, statistic, KEY)[200] == 1.0
    assert detection_rates(human, statistic, KEY)[200] <= 0.1


@pytest.mark.parametrize("statistic", list(STATISTICS))
def test_dispersion_counts_planted_text_only_under_its_own_key(statistic, marked):
    counts = key_dispersion(marked, statistic, [KEY, KEY + 1, KEY + 2])
    assert counts[0] == len(marked)
    assert counts[1:].sum() <= 1


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
