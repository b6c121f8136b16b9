"""The p-value histogram (provenance.lib.histogram): bins of powers of ten, the threshold
line, texts beyond it in the bins past the line, and the rows of its text alternative."""

from __future__ import annotations

import math

from detector.decision import rule
from provenance.lib.histogram import MAX_BINS, PAD, WIDTH, histogram, p_label


def test_nothing_scored_draws_nothing():
    assert histogram([], 0.01) == {}


def test_each_text_lands_in_its_power_of_ten():
    chart = histogram([-0.2, -0.5, -1.5, -3.2], 0.01)
    assert [row["count"] for row in chart["rows"]] == [2, 1, 0, 1]
    assert [(row["low"], row["high"]) for row in chart["rows"]][:2] == [
        ("0.1", "1"),
        ("0.01", "0.1"),
    ]
    assert chart["rows"][-1]["low"] == "0"  # the last bin holds everything smaller
    assert chart["total"] == 4 and chart["tallest"] == 2


def test_the_threshold_line_separates_the_bins_beyond_it():
    chart = histogram([-0.1] * 9 + [-40.0], 0.01)
    beyond = [bar for bar in chart["bars"] if bar["beyond"]]
    assert sum(bar["count"] for bar in beyond) == 1
    assert all(bar["x"] >= chart["threshold_x"] for bar in beyond)
    assert chart["pad"] < chart["threshold_x"] < chart["bars"][1]["x"] + 10
    assert chart["threshold_label"] == "0.01"
    assert chart["threshold_anchor"] == "start"  # near the left edge: labelled to its right
    assert histogram([-1.0], 1e-30)["threshold_anchor"] == "end"


def test_tiny_p_values_share_wider_bins_and_stay_in_the_chart():
    chart = histogram([-0.3, -5000.0], 0.01)
    assert len(chart["bars"]) <= MAX_BINS and chart["bars"][-1]["count"] == 1
    assert max(bar["x"] + bar["width"] for bar in chart["bars"]) <= chart["x_end"] + 1
    tallest = max(chart["bars"], key=lambda bar: bar["height"])
    assert tallest["y"] == chart["pad"]  # the tallest bar reaches the top


def test_p_labels_read_as_numbers_then_powers_of_ten():
    assert [p_label(d) for d in (0, 1, 2, 3, 20)] == ["1", "0.1", "0.01", "1e-3", "1e-20"]


def test_the_line_is_where_the_decisions_rule_flags(monkeypatch):
    """The line is the decision's own (``detector.decision.rule.threshold_log10``), not a
    figure of the chart's: were the rule to flag only below threshold / 100, the line and the
    bars beyond it would follow."""

    def at(decades: float) -> float:  # six bins of one power of ten each
        return round(PAD + (WIDTH - 2 * PAD) * decades / 6, 1)

    log10_ps = [-0.5, -2.5, -5.5]
    chart = histogram(log10_ps, 0.01)
    assert chart["threshold_x"] == at(2)
    assert sum(bar["count"] for bar in chart["bars"] if bar["beyond"]) == 2
    monkeypatch.setattr(rule, "threshold_log10", lambda threshold: math.log10(threshold) - 2)
    moved = histogram(log10_ps, 0.01)
    assert moved["threshold_x"] == at(4)
    assert sum(bar["count"] for bar in moved["bars"] if bar["beyond"]) == 1
