"""Oracle tiers (provenance.checks.tiers): what a basic-tier answer keeps, rounds and drops."""

from __future__ import annotations

import math
from types import SimpleNamespace

from provenance.checks import tiers


def test_p_values_round_down_to_their_power_of_ten():
    assert tiers.round_p(3.7e-9) == 1e-9 and tiers.round_p(0.5) == 0.1
    assert tiers.round_p(0.0) == 0.0 and tiers.round_p(None) is None
    assert tiers.round_log10(-8.43) == -9.0 and tiers.round_log10(None) is None
    for p in [0.3, 0.01, 2.5e-40]:
        assert tiers.round_p(p) <= p and math.isclose(
            math.log10(tiers.round_p(p)), tiers.round_log10(math.log10(p)), abs_tol=1e-9
        )


def test_a_redacted_answer_keeps_its_shape_without_exact_figures_or_per_token_data():
    answer = {
        "verdict": "watermarked",
        "p_value": 3.7e-9,
        "log10_p": -8.43,
        "score": 1.7,
        "heatmap": {"scores": [1.0]},
        "hypotheses": [{"adjusted_log10_p": -8.1, "weighted_log10_p": None, "key_name": "k"}],
        "spans": [{"log10_p": -5.5, "start_char": 3}],
    }
    redacted = tiers.redact(answer)
    assert redacted == {
        "verdict": "watermarked",
        "p_value": 1e-9,
        "log10_p": -9.0,
        "score": None,
        "hypotheses": [{"adjusted_log10_p": -9.0, "weighted_log10_p": None, "key_name": "k"}],
        "spans": [{"log10_p": -6.0, "start_char": 3}],
    }
    assert answer["p_value"] == 3.7e-9  # the original is left as it was


def test_a_basic_page_shows_rounded_figures_and_no_heatmap():
    check = SimpleNamespace(
        token_data={"scores": [1.0]}, log10_p=-8.43, p_value=3.7e-9, spans=[{"log10_p": -5.5}]
    )
    hypothesis = SimpleNamespace(
        score=2.0,
        log10_p=-8.43,
        p_value=3.7e-9,
        adjusted_log10_p=-8.1,
        decision_log10_p=-7.6,
        weighted_log10_p=-3.2,
    )
    tiers.basic_view(check, [hypothesis])
    assert check.token_data is None and (check.log10_p, check.p_value) == (-9.0, 1e-9)
    assert check.spans == [{"log10_p": -6.0}]
    assert hypothesis.score is None and hypothesis.adjusted_log10_p == -9.0
    assert hypothesis.decision_log10_p == -8.0
    assert (hypothesis.weighted_log10_p, hypothesis.p_value) == (-4.0, 1e-9)
