"""The geometry of a key's calibration charts, drawn as inline SVG by the keys page: the
realized false-positive rate per genre with its 95% interval against the threshold, and the
power curve (share of watermarked texts detected by length) against 80%. Plain numbers in,
coordinates out; the page adds the words."""

from __future__ import annotations

import math
from typing import Any

from detector.evidence.calibration import TARGET_POWER

WIDTH, ROW_H, LEFT, RIGHT, TOP, BOTTOM = 600, 26, 170, 20, 22, 36
POWER_H, POWER_LEFT = 220, 44


def nice_step(top: float, ticks: int = 4) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about ``ticks`` steps up to ``top``."""
    raw = top / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)


def _ticks(top: float) -> tuple[float, list[float]]:
    step = nice_step(top)
    count = math.ceil(top / step - 1e-9)
    return step * count, [round(step * i, 12) for i in range(count + 1)]


def _label(value: float) -> str:
    return f"{value:g}"


def rates_chart(rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """One row per measured rate (``rate``, ``ci_low``, ``ci_high``, ``above_threshold``,
    ``assisted``; any other key is kept for the page), a dot at the rate and a bar over its
    interval, on a linear axis from 0 that holds every interval and the threshold."""
    if not rows:
        return {}
    top = min(max([threshold * 2, *(row["ci_high"] for row in rows)]) * 1.05, 1.0)
    top, ticks = _ticks(top if top > 0 else 1.0)
    span = WIDTH - LEFT - RIGHT

    def x(value: float) -> float:
        return round(LEFT + span * min(max(value, 0.0), top) / top, 1)

    height = TOP + ROW_H * len(rows) + BOTTOM
    drawn = []
    for index, row in enumerate(rows):
        classes = " ".join(
            name
            for name, on in (("above", row["above_threshold"]), ("assisted", row.get("assisted")))
            if on
        )
        drawn.append(
            {
                **row,
                "y": TOP + ROW_H * index + ROW_H // 2,
                "x_rate": x(row["rate"]),
                "x_low": x(row["ci_low"]),
                "x_high": x(row["ci_high"]),
                "classes": classes,
            }
        )
    return {
        "width": WIDTH,
        "height": height,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "top": TOP,
        "base": height - BOTTOM,
        "rows": drawn,
        "threshold_x": x(threshold),
        "threshold_label": _label(threshold),
        "ticks": [{"x": x(value), "label": _label(value)} for value in ticks],
    }


def power_chart(curves: list[dict[str, Any]]) -> dict[str, Any]:
    """One polyline per sampling setting (``points``: ``tokens``, ``power``), a dashed line at
    80% and a mark at each setting's ``tokens_needed`` (None: not reached, no mark)."""
    lengths = [point["tokens"] for curve in curves for point in curve["points"]]
    if not lengths:
        return {}
    right, base = WIDTH - RIGHT, POWER_H - BOTTOM
    top_tokens, ticks = _ticks(max(lengths))

    def xy(tokens: float, power: float) -> tuple[float, float]:
        x = POWER_LEFT + (right - POWER_LEFT) * tokens / top_tokens
        return round(x, 1), round(base - (base - TOP) * power, 1)

    drawn = []
    for index, curve in enumerate(curves):
        points = [xy(p["tokens"], p["power"]) for p in curve["points"]]
        needed = curve.get("tokens_needed")
        drawn.append(
            {
                **curve,
                "series": f"s{index % 2}",
                "polyline": " ".join(f"{x},{y}" for x, y in points),
                "dots": [{"x": x, "y": y} for x, y in points],
                "needed_x": None if needed is None else xy(needed, 0)[0],
                "legend_x": POWER_LEFT + 150 * index,
            }
        )
    return {
        "width": WIDTH,
        "height": POWER_H,
        "left": POWER_LEFT,
        "right": right,
        "top": TOP,
        "base": base,
        "curves": drawn,
        "target_y": xy(0, TARGET_POWER)[1],
        "ticks": [{"x": xy(value, 0)[0], "label": _label(value)} for value in ticks],
        "legend_y": base + 30,
    }
