"""A family of hypotheses corrected together: Holm and Bonferroni against hand computations,
the best hypothesis, and the three-way verdict that waits for every key's power."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from detector.decision.family import (
    FamilyVerdict,
    VerdictResult,
    correct,
    family_verdict,
    first_step_log10,
)
from detector.evidence import power
from detector.evidence.detection import Detection, detect_ids
from tests.detector.planted import human_ids
from tests.detector.toy import keyed_sample, toy_logits

KEY = 0xC0FFEE_1234_5678
HUMAN_KEY = 0x1234_5678_9ABC_DEF0  # a key the planted human text is clear of


@pytest.fixture(scope="module")
def watermarked():
    rng = np.random.default_rng(5)
    return keyed_sample(KEY, toy_logits(rng, vocab=500, steps=200))


def _detection(p_value: float, scored: int = 10) -> Detection:
    """A detection carrying only a p-value (what the family correction reads)."""
    return Detection(
        score=0.0,
        p_value=p_value,
        log10_p=math.log10(p_value),
        num_tokens=scored,
        num_scored_tokens=scored,
        token_scores=np.zeros(scored),
        scored_mask=np.ones(scored, bool),
    )


def test_holm_adjusts_a_worked_example():
    # p = (0.01, 0.04, 0.03, 0.005): sorted, times (4, 3, 2, 1) = (0.02, 0.03, 0.06, 0.04),
    # made non-decreasing: (0.02, 0.03, 0.06, 0.06), put back in the original order.
    family = [_detection(p) for p in (0.01, 0.04, 0.03, 0.005)]
    verdict = family_verdict(family, threshold=0.025)
    adjusted = [10**h.adjusted_log10_p for h in verdict.hypotheses]
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert verdict.best == 3 and verdict.p_value == pytest.approx(0.02)
    assert verdict.is_watermarked
    assert not family_verdict(family, threshold=0.015).is_watermarked  # 0.02 > 0.015


def test_bonferroni_multiplies_by_the_family_size():
    family = [_detection(p) for p in (0.01, 0.04, 0.03, 0.005)]
    verdict = family_verdict(family, threshold=0.025, correction="bonferroni")
    adjusted = [10**h.adjusted_log10_p for h in verdict.hypotheses]
    assert adjusted == pytest.approx([0.04, 0.16, 0.12, 0.02])


def test_family_verdict_is_corrected_for_the_number_of_hypotheses(watermarked):
    tokens = watermarked[:40]
    family = [detect_ids(tokens, KEY + i) for i in range(8)]  # the true key is hypothesis 0
    # Expected from the definition, with scipy's gamma tail (not the detector's statistics):
    # the strongest hypothesis is rejected at level t when 8 * p_min <= t.
    scored = [d.num_scored_tokens for d in family]
    p = [stats.gamma.sf(d.score, a=n) for d, n in zip(family, scored, strict=True)]
    assert int(np.argmin(p)) == 0 and 0 < p[0] < 0.05 / 8
    for threshold in (0.05, 8 * p[0] * 0.99, 8 * p[0] * 1.01):
        verdict = family_verdict(family, threshold=threshold)
        assert verdict.best == 0 and verdict.num_hypotheses == 8
        assert verdict.p_value == pytest.approx(8 * p[0], rel=1e-6)
        assert verdict.is_watermarked == (8 * p[0] <= threshold)


def test_the_family_bar_is_the_threshold_over_the_family_size():
    bar = 10 ** first_step_log10(0.05, 8)
    assert bar == pytest.approx(0.05 / 8)
    others = [_detection(0.5)] * 7
    assert family_verdict([_detection(bar * 0.99), *others], threshold=0.05).is_watermarked
    assert not family_verdict([_detection(bar * 1.01), *others], threshold=0.05).is_watermarked


def test_a_family_whose_best_hypothesis_scored_nothing_is_not_watermarked():
    empty = replace(_detection(1e-9), num_scored_tokens=0)
    assert not family_verdict([empty, _detection(0.5)]).is_watermarked
    assert family_verdict([]).best is None and not family_verdict([]).is_watermarked


def test_a_family_needs_power_at_its_corrected_level_for_every_key():
    """Eight keys on about 250 scored tokens: 200 suffice for one key, not at threshold / 8."""
    ids = human_ids()[20_000:20_300]
    single = family_verdict([detect_ids(ids, HUMAN_KEY)], threshold=0.01)
    assert single.verdict == "not_watermarked"
    family = family_verdict([detect_ids(ids, HUMAN_KEY + k) for k in range(8)], threshold=0.01)
    assert family.verdict == "inconclusive" and not family.is_watermarked
    needed = power.tokens_for_power(
        power.mean_score_for(power.DEFAULT_TOKENS_NEEDED), np.log10(0.01 / 8)
    )
    assert f"about {needed} are needed" in family.verdict_reason


def test_correct_gives_holm_and_bonferroni_by_hand():
    p = np.array([0.2, 0.001, 0.04])
    # Holm: sorted (0.001, 0.04, 0.2) times (3, 2, 1) = (0.003, 0.08, 0.2), non-decreasing.
    assert 10 ** correct(np.log10(p)) == pytest.approx([0.2, 0.003, 0.08])
    assert 10 ** correct(np.log10(p), "bonferroni") == pytest.approx([0.6, 0.003, 0.12])
    capped = 10 ** correct(np.log10([0.5, 0.9]), "bonferroni")
    assert capped == pytest.approx([1.0, 1.0])  # a corrected p-value never exceeds one
    assert correct([]).size == 0


def test_holm_is_never_above_bonferroni():
    rng = np.random.default_rng(0)
    for _ in range(50):
        lp = np.log10(rng.uniform(1e-6, 1, size=rng.integers(1, 9)))
        assert np.all(correct(lp, "holm") <= correct(lp, "bonferroni") + 1e-12)
        assert np.all(correct(lp, "holm") >= lp - 1e-12)


def test_an_unknown_correction_is_refused():
    with pytest.raises(ValueError, match="unknown correction 'sidak'"):
        correct([-2.0], "sidak")
    with pytest.raises(ValueError):
        family_verdict([_detection(0.01)], correction="sidak")


def test_names_and_decisions_are_carried_into_the_hypotheses():
    family = [_detection(0.3), _detection(1e-4)]
    verdict = family_verdict(family, names=["a", "b"], threshold=0.01)
    assert [(h.index, h.name) for h in verdict.hypotheses] == [(0, "a"), (1, "b")]
    assert [h.decided_by for h in verdict.hypotheses] == ["gamma", "gamma"]
    assert verdict.hypotheses[1].decision_log10_p == pytest.approx(-4.0)
    assert verdict.best == 1 and verdict.is_watermarked and verdict.verdict == "watermarked"
    assert verdict.power is None and verdict.correction == "holm"
    with pytest.raises(ValueError, match="one name per detection"):
        family_verdict(family, names=["a"])
    with pytest.raises(ValueError):
        family_verdict(family, threshold=1.5)


def test_the_family_is_inconclusive_when_one_key_lacks_power():
    threshold, mean = 0.01, power.mean_score_for(power.DEFAULT_TOKENS_NEEDED)
    level = math.log10(threshold / 2)
    strong, weak = _detection(0.5, scored=5_000), _detection(0.5, scored=40)
    clear = family_verdict([strong, replace(strong)], names=["big", "other"], threshold=threshold)
    assert clear.verdict == "not_watermarked" and clear.power >= 0.8
    mixed = family_verdict([strong, weak], names=["big", "small"], threshold=threshold)
    assert mixed.verdict == "inconclusive" and not mixed.is_watermarked
    assert "(key small)" in mixed.verdict_reason and "only 40 tokens" in mixed.verdict_reason
    assert mixed.power == pytest.approx(power.constant_power(40, mean, level))
    assert mixed.tokens_needed == power.tokens_for_power(mean, level)


def test_the_gamma_share_lowers_the_level_the_power_is_measured_at():
    family = [_detection(0.5, scored=300), _detection(0.5, scored=300)]
    one, part = family_verdict(family), family_verdict(family, gamma_share=0.8)
    assert part.power < one.power
    mean = power.mean_score_for(power.DEFAULT_TOKENS_NEEDED)
    assert part.power == pytest.approx(power.constant_power(300, mean, math.log10(0.01 * 0.8 / 2)))
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="gamma_share"):
            family_verdict(family, gamma_share=bad)


def test_a_verdict_result_answers_for_its_family():
    verdict = family_verdict([_detection(1e-5), _detection(0.2)], threshold=0.01)

    class Result(VerdictResult):
        def __init__(self, family: FamilyVerdict) -> None:
            self.family = family

    got = Result(verdict)
    assert (got.verdict, got.is_watermarked, got.best) == ("watermarked", True, 0)
    assert got.p_value == verdict.p_value == pytest.approx(2e-5)
    assert got.log10_p == verdict.log10_p and got.num_hypotheses == 2
    assert got.verdict_reason == verdict.verdict_reason and got.tokens_needed is None
