"""The evidence along a text (detector/evidence/chart.py): the Gamma p-value of each prefix."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from detector.core.config import KeyConfig
from detector.evidence.chart import cumulative_log10_p
from detector.evidence.detection import detect_config, survival


@pytest.mark.parametrize(
    "config", [KeyConfig(42), KeyConfig(42, algorithm="dual_key_gumbel", alpha=0.3)]
)
@pytest.mark.parametrize("scale", [1.0, 9.0])  # 9x: the tail underflows a float along the way
def test_the_cumulative_evidence_is_the_survival_of_each_prefix(config, scale):
    rng = np.random.default_rng(7)
    detection = detect_config(rng.integers(0, 49152, 3000), config, 0.01)
    detection = replace(detection, token_scores=np.asarray(detection.token_scores) * scale)
    curve = cumulative_log10_p(detection, config, 60)
    sums = np.cumsum(detection.token_scores)
    counts = np.cumsum(detection.scored_mask)
    assert len(curve) == 60 and curve[-1][0] == 2999
    for index, log10_p in curve:
        expected = survival(config, float(sums[index]), int(counts[index]))[1]
        assert log10_p == pytest.approx(expected, rel=1e-12, abs=1e-12)
    if scale > 1:
        assert curve[-1][1] < -300  # the exact branch, past the float's range


def test_short_texts_give_every_token_and_an_empty_text_nothing():
    config = KeyConfig(42)
    detection = detect_config(np.arange(1, 12), config, 0.01)
    curve = cumulative_log10_p(detection, config, 60)
    assert [i for i, _ in curve] == list(range(detection.num_tokens))
    empty = detect_config(np.array([], np.int64), config, 0.01)
    assert cumulative_log10_p(empty, config, 60) == []


def test_a_watermarked_stretch_drives_the_curve_down_and_human_text_leaves_it_near_zero():
    config = KeyConfig(42)
    rng = np.random.default_rng(3)
    detection = detect_config(rng.integers(0, 49152, 2000), config, 0.01)
    scores = np.asarray(detection.token_scores).copy()
    scores[1000:1400] += 2.0  # a planted excess over the second half's start
    planted = replace(detection, token_scores=scores)
    before = cumulative_log10_p(detection, config, 40)
    after = cumulative_log10_p(planted, config, 40)
    assert min(lp for _, lp in before) > -3  # null scores: no prefix reads as watermarked
    at = {i: lp for i, lp in after}
    first = [lp for i, lp in after if i < 1000]
    assert first == [lp for i, lp in before if i < 1000]  # a prefix sees only its own tokens
    assert at[max(at)] < -30
