"""The calibration charts' geometry: every interval and the threshold on the rates' axis,
the power curves in the frame, the 80% line and the marks where a setting reaches it."""

from __future__ import annotations

import pytest

from provenance.lib.calibration_chart import (
    LEFT,
    POWER_LEFT,
    RIGHT,
    WIDTH,
    nice_step,
    power_chart,
    rates_chart,
)


def _row(rate, low, high, above=False, assisted=False):
    return {
        "rate": rate,
        "ci_low": low,
        "ci_high": high,
        "above_threshold": above,
        "assisted": assisted,
    }


@pytest.mark.parametrize(
    ("top", "step"), [(0.021, 0.01), (0.05, 0.02), (300, 100), (1.0, 0.5), (0.0123, 0.005)]
)
def test_steps_are_one_two_or_five_times_a_power_of_ten(top, step):
    assert nice_step(top) == pytest.approx(step)


def test_the_rates_axis_holds_every_interval_and_the_threshold():
    rows = [_row(0.04, 0.021, 0.069, above=True), _row(0.0, 0.0, 0.0122), _row(0.02, 0.01, 0.03)]
    chart = rates_chart(rows, 0.01)
    xs = [x for r in chart["rows"] for x in (r["x_low"], r["x_rate"], r["x_high"])]
    assert all(LEFT <= x <= WIDTH - RIGHT for x in xs)
    first = chart["rows"][0]
    assert first["x_low"] < first["x_rate"] < first["x_high"] and first["classes"] == "above"
    assert chart["rows"][1]["x_low"] == LEFT  # a rate of 0 starts at the axis
    assert LEFT < chart["threshold_x"] < first["x_low"]  # prose lies wholly above it
    assert chart["ticks"][0] == {"x": LEFT, "label": "0"}
    assert chart["ticks"][-1]["x"] == WIDTH - RIGHT and float(chart["ticks"][-1]["label"]) >= 0.069
    ys = [r["y"] for r in chart["rows"]]
    assert ys == sorted(ys) and len(set(ys)) == 3 and max(ys) < chart["base"]


def test_an_assisted_row_is_marked_and_no_rows_draw_nothing():
    chart = rates_chart([_row(0.025, 0.001, 0.13, assisted=True)], 0.01)
    assert chart["rows"][0]["classes"] == "assisted"
    assert rates_chart([], 0.01) == {}


def test_the_power_curves_lie_in_the_frame_with_the_80_percent_line():
    curves = [
        {
            "setting": "1.0",
            "tokens_needed": 100,
            "points": [
                {"tokens": 25, "power": 0.125},
                {"tokens": 100, "power": 0.875},
                {"tokens": 150, "power": 1.0},
            ],
        },
        {
            "setting": "0.7",
            "tokens_needed": None,
            "points": [{"tokens": 25, "power": 0.0}, {"tokens": 150, "power": 0.625}],
        },
    ]
    chart = power_chart(curves)
    hot, cool = chart["curves"]
    assert hot["series"] == "s0" and cool["series"] == "s1"
    assert len(hot["polyline"].split()) == 3 and len(hot["dots"]) == 3
    assert cool["needed_x"] is None and POWER_LEFT < hot["needed_x"] < chart["right"]
    assert hot["dots"][-1]["y"] == chart["top"]  # 100% at the top
    assert cool["dots"][0]["y"] == chart["base"]  # 0% on the axis
    assert chart["top"] < chart["target_y"] < chart["base"]
    assert chart["ticks"][-1]["label"] == "150" and hot["dots"][-1]["x"] == chart["right"]
    assert power_chart([]) == {} and power_chart([{"setting": "1.0", "points": []}]) == {}
