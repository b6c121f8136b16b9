"""The heatmap's encoding for the page (provenance.lib.heatmap): the compact per-token string,
the spans' ranges and sentences, and the cumulative-evidence chart."""

from __future__ import annotations

import math

from django.utils import translation

from detector.decision.decide import gamma_line_log10
from detector.evidence.localize import GAMMA_SHARE
from provenance.lib import heatmap

DATA = {
    "offsets": [[0, 3], [4, 9], [9, 10], [12, 20]],
    "scores": [0.5, 2.344, 0.0, 7.0],
    "scored": [True, True, False, True],
    "context_width": 4,
    "chart": [[0, -0.5], [2, -1.5], [3, -4.0]],
}


def _decode(triples: str) -> list[tuple[int, int, int]]:
    values = [int(v) for v in triples.split(",")]
    return [tuple(values[i : i + 3]) for i in range(0, len(values), 3)]  # type: ignore[misc]


def test_each_token_is_its_gap_length_and_score_in_hundredths_or_minus_one():
    triples = _decode(heatmap.token_triples(DATA))
    assert triples == [(0, 3, 50), (1, 5, 234), (0, 1, -1), (2, 8, 700)]
    # the gaps and lengths give the offsets back
    cursor, offsets = 0, []
    for gap, length, _ in triples:
        offsets.append([cursor + gap, cursor + gap + length])
        cursor += gap + length
    assert offsets == DATA["offsets"]


def test_no_data_encodes_to_nothing():
    assert heatmap.token_triples(None) == "" and heatmap.token_triples({}) == ""
    assert heatmap.compact(None) is None


def test_the_compact_form_keeps_the_width_the_chart_and_the_tokens():
    compact = heatmap.compact(DATA)
    assert compact == {
        "context_width": 4,
        "chart": DATA["chart"],
        "tokens": heatmap.token_triples(DATA),
    }
    assert heatmap.compact({**DATA, "chart": None})["chart"] == []


def test_span_ranges_and_sentences_are_one_per_span_one_based_inclusive():
    spans = [
        {
            "start_token": 9,
            "end_token": 20,
            "start_char": 1039,
            "end_char": 1702,
            "key_id": "k-1",
            "key_name": "acme",
            "log10_p": -7.2,
            "num_scored_tokens": 11,
        }
    ]
    assert heatmap.span_ranges(spans) == "1039,1702" and heatmap.span_ranges(None) == ""
    with translation.override("en"):
        (sentence,) = heatmap.span_sentences(spans)
    assert "10–20" in sentence and "1,040–1,702" in sentence and "“acme”" in sentence
    assert heatmap.span_sentences(None) == []


def test_the_chart_draws_the_evidence_and_the_line_the_gamma_test_must_cross():
    drawn = heatmap.chart(DATA, threshold=0.01, num_hypotheses=2)
    needed = -gamma_line_log10(0.01, 2)
    # Holm's first step threshold / m on the document p-value min(p_global / w, p_scan / (1 - w))
    assert math.isclose(needed, -math.log10(0.01 * GAMMA_SHARE / 2))
    assert drawn["threshold_label"] == f"-log10 p = {needed:.1f}"
    points = [tuple(map(float, p.split(","))) for p in drawn["polyline"].split()]
    assert len(points) == len(DATA["chart"])
    xs, ys = [x for x, _ in points], [y for _, y in points]
    assert xs[0] == heatmap.PAD and xs[-1] == heatmap.CHART_W - heatmap.PAD
    assert ys == sorted(ys, reverse=True)  # more evidence is higher on the chart
    assert heatmap.PAD <= drawn["threshold_y"] <= heatmap.CHART_H - heatmap.PAD
    assert drawn["n"] == 4 and heatmap.chart(None, 0.01, 1) == {}


def test_the_chart_line_is_halved_again_when_the_weighted_test_joined():
    plain = heatmap.chart(DATA, threshold=0.01, num_hypotheses=2)
    weighted = heatmap.chart(DATA, threshold=0.01, num_hypotheses=2, weighted=True)
    needed = -gamma_line_log10(0.01, 2, weighted=True)
    assert math.isclose(needed, -math.log10(0.01 * GAMMA_SHARE / 2 / 2))
    assert weighted["threshold_label"] == f"-log10 p = {needed:.1f}"
    assert weighted["threshold_label"] != plain["threshold_label"]
