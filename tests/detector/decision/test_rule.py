"""The watermark rule, written once: the threshold with tokens scored, the weighted test's
Bonferroni join and the test that decided; every verdict of the detector follows it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.decision import rule
from detector.decision.family import decision_log10_p, family_verdict, flagged
from detector.decision.rule import LOG10_2, MIN_TOKENS, decided_by, flags, too_short, with_weighted
from detector.evidence.detection import detect_ids
from tests.detector.planted import human_ids, watermark_ids

KEY = 0x1234_5678_9ABC_DEF0


def test_flags_is_the_threshold_with_tokens_scored():
    assert flags(math.log10(0.01), 0.01, 1)  # at the threshold: flagged
    assert not flags(math.log10(0.0101), 0.01, 1)
    assert not flags(-50.0, 0.01, 0)  # nothing scored: never flagged
    assert flags(-2.5, 0.005, 300) and not flags(-2.2, 0.005, 300)


def test_with_weighted_is_twice_the_smaller_p_capped_at_one():
    assert with_weighted(-3.0, None) == -3.0
    assert with_weighted(-3.0, -5.0) == pytest.approx(-5.0 + LOG10_2)
    assert with_weighted(-5.0, -3.0) == pytest.approx(-5.0 + LOG10_2)
    assert with_weighted(-0.1, -0.2) == 0.0  # 2 * 0.63 > 1


def test_decided_by_names_the_smaller_side():
    assert decided_by(-3.0, None) == "gamma"
    assert decided_by(-3.0, -4.0) == "weighted"
    assert decided_by(-4.0, -3.0) == "gamma"
    assert decided_by(-3.0, -3.0) == "gamma"  # a tie stays with the Gamma test


def test_one_detection_and_its_family_of_one_follow_the_rule():
    for ids in (watermark_ids(KEY, 300, seed=3), human_ids()[:400], human_ids()[:3]):
        d = detect_ids(ids, KEY)
        own = decision_log10_p(d)
        assert own == d.log10_p  # no model: the Gamma test alone
        assert flagged(d) == flags(own, 0.01, d.num_scored_tokens)
        verdict = family_verdict([d], threshold=0.01)
        assert verdict.is_watermarked == flagged(d)
        assert (verdict.verdict == "watermarked") == flagged(d)


def test_with_a_model_the_detection_joins_the_weighted_test():
    ids = watermark_ids(KEY, 200, seed=4)
    d = detect_ids(ids, KEY, expected_scores=np.full(ids.size, 1.5))
    assert d.weighted is not None
    assert decision_log10_p(d) == with_weighted(d.log10_p, d.weighted.log10_p)
    (h,) = family_verdict([d]).hypotheses
    assert h.decided_by == decided_by(d.log10_p, d.weighted.log10_p)
    assert h.decision_log10_p == decision_log10_p(d)


def test_a_text_is_too_short_only_when_short_under_every_tokenizer():
    assert too_short([MIN_TOKENS - 1]) and not too_short([MIN_TOKENS])
    assert not too_short([3, MIN_TOKENS, 2])  # long enough under one tokenizer: tested
    assert too_short([])  # read with no tokenizer: nothing to test


def test_too_short_reads_its_counts_lazily_and_the_rules_own_minimum(monkeypatch):
    def counts():
        yield MIN_TOKENS + 5
        raise AssertionError("a second tokenizer was asked after the first answered")

    assert not too_short(counts())
    monkeypatch.setattr(rule, "MIN_TOKENS", 40)
    assert too_short([MIN_TOKENS + 5])
