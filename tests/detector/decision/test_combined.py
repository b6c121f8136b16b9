"""The combined claim across organizations (``detector.decision.combined``): the correction
of the organizations' own verdicts for their number, on the coarse strengths alone."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from detector.core.stats import CORRECTIONS
from detector.decision.combined import CORRECTION, combine, stands, strength_band


def _local(verdict: str, strength: int | None = None, model: str | None = None) -> dict[str, Any]:
    return {
        "organization": "Local",
        "status": "answered",
        "verdict": verdict,
        "model": model,
        "strength": strength,
        "tokens_scored": 300,
    }


def _line(status: str, verdict: str | None = None, strength: int | None = None) -> dict:
    model = "Peer model" if verdict == "watermarked" else None
    return {
        "organization": "Peer",
        "status": status,
        "verdict": verdict,
        "model": model,
        "strength": strength,
    }


def test_a_claim_stands_when_m_times_its_bound_is_within_the_threshold():
    got = combine([_local("watermarked", -4, "M"), _line("unreachable")], 0.01)
    # p < 1e-3, two organizations asked: the corrected p < 2e-3 <= 0.01
    assert got == {
        "verdict": "watermarked",
        "organizations": 2,
        "correction": "bonferroni",
        "supported": [{"organization": "Local", "model": "M", "strength": -3}],
    }


def test_a_claim_that_does_not_survive_the_correction_is_not_supported():
    # p < 1e-2 says the local verdict; with a second organization asked, 2e-2 > 0.01
    got = combine([_local("watermarked", -3, "M"), _line("answered", "not_watermarked")], 0.01)
    assert got["supported"] == [] and got["verdict"] == "inconclusive"


def test_the_boundary_is_exact_in_decimal():
    # 5 organizations, p < 1e-3: 5e-3 <= 0.005 holds exactly, not by a float's rounding
    lines = [_line("unreachable")] * 4
    assert combine([_local("watermarked", -4, "M"), *lines], 0.005)["verdict"] == "watermarked"
    assert combine([_local("watermarked", -4, "M"), *lines], 0.0049)["verdict"] == "inconclusive"


def test_unreachable_peers_count_as_asked():
    ten = combine([_local("watermarked", -4, "M"), *[_line("unreachable")] * 9], 0.01)
    assert ten["organizations"] == 10 and ten["supported"][0]["strength"] == -3  # 1e-2 <= 0.01
    eleven = combine([_local("watermarked", -4, "M"), *[_line("unreachable")] * 10], 0.01)
    assert eleven["organizations"] == 11 and eleven["supported"] == []  # 1.1e-2 > 0.01


def test_a_peer_claim_stands_beside_a_local_not_watermarked():
    got = combine([_local("not_watermarked"), _line("answered", "watermarked", -20)], 0.01)
    assert got["verdict"] == "watermarked"
    assert got["supported"] == [{"organization": "Peer", "model": "Peer model", "strength": -19}]


def test_not_watermarked_needs_every_organization_to_say_so():
    everyone = combine([_local("not_watermarked"), _line("answered", "not_watermarked")], 0.01)
    assert everyone["verdict"] == "not_watermarked"
    invalid = combine([_local("not_watermarked"), _line("receipt_invalid")], 0.01)
    assert invalid["verdict"] == "inconclusive"
    assert combine([], 0.01)["verdict"] == "inconclusive"  # nobody asked says nothing


def test_an_invalid_receipts_claim_is_never_counted():
    line = {**_line("receipt_invalid"), "verdict": "watermarked", "strength": -30}
    assert combine([_local("not_watermarked"), line], 0.01)["supported"] == []


@pytest.mark.parametrize("m", [1, 2, 3, 7, 12])
@pytest.mark.parametrize("strength", [-31, -13, -7, -4, -3, -2])
@pytest.mark.parametrize("threshold", [0.05, 0.01, 0.001])
def test_a_claim_stands_as_the_named_correction_of_its_bound_says(m, strength, threshold):
    """The claim is the detector's correction of that name (``detector.core.stats``) applied
    to the bound 10^(strength+1) of each of the m organizations; on the exact boundary the
    decimal comparison lets it stand."""
    corrected = float(CORRECTIONS[CORRECTION]([strength + 1.0] * m)[0])
    on_boundary = abs(corrected - math.log10(threshold)) < 1e-9
    assert stands(strength, m, threshold) == (on_boundary or corrected <= math.log10(threshold))
    answers = [_local("watermarked", strength, "M"), *[_line("unreachable")] * (m - 1)]
    got = combine(answers, threshold)
    assert (got["verdict"] == "watermarked") == stands(strength, m, threshold)
    for claim in got["supported"]:  # its combined strength still bounds the corrected p
        assert claim["strength"] + 1 >= corrected - 1e-9


def test_a_strength_is_the_tightest_band_that_holds_and_bounds_the_p_value():
    bands = [strength_band(x) for x in (-0.5, -1.5, -2.0, -2.5, -6.0, -6.1, -12.5, -30.0, -191.0)]
    assert bands == [-1, -1, -1, -3, -3, -7, -13, -13, -31]
    for log10_p in np.linspace(-200.0, -1e-3, 4001):  # a watermarked answer: p < 1
        assert log10_p < strength_band(log10_p) + 1  # p < 10^(strength+1), always
