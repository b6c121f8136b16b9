"""The p-value distribution of an audit as an inline SVG bar chart (no Django, no script).

The x axis is -log10 p, so each unit is a power of ten of the p-value (a log scale of p);
bars count the texts whose corrected p-value falls in each bin, and a vertical line marks the
threshold the verdict compares the corrected p-value with, where the decision's own rule puts
it (``detector.decision.rule.threshold_log10``). Human texts pile up near p = 1
(the left); watermarked ones lie far to the right, beyond the line. At most ``MAX_BINS``
bins: past that many powers of ten a bin spans several, and p-values below the last bin's
floor are counted in it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from detector.decision import rule

WIDTH, HEIGHT, PAD = 600, 180, 32
MAX_BINS = 20
MIN_DECADES = 4  # the axis reaches at least p = 1e-4, and one power of ten past the line
CAP_DECADES = 300  # p-values beyond 1e-300 share the last bin


def p_label(decades: float) -> str:
    """The p-value ``10 ** -decades`` as a short label: 1, 0.1, 0.01, 1e-3, ..."""
    if decades <= 0:
        return "1"
    if decades < 3 and float(decades).is_integer():
        return f"{10.0**-decades:g}"
    return f"1e-{decades:g}"


def histogram(log10_ps: Sequence[float], threshold: float) -> dict[str, Any]:
    """Bars, axis labels and the threshold line for the chart, and ``rows`` (each bin's
    p-value range and count) for its text alternative. Empty when nothing was scored."""
    if not log10_ps:
        return {}
    line = -rule.threshold_log10(threshold)
    deepest = max(-lp for lp in log10_ps)
    top = min(max(math.ceil(deepest), math.ceil(line) + 1, MIN_DECADES), CAP_DECADES)
    width = math.ceil(top / MAX_BINS)
    bins = math.ceil(top / width)
    counts = [0] * bins
    for lp in log10_ps:
        counts[min(int(max(-lp, 0.0) // width), bins - 1)] += 1
    span = bins * width
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    tallest = max(counts)

    def x(decades: float) -> float:
        return round(PAD + inner_w * decades / span, 1)

    bars, rows = [], []
    for i, count in enumerate(counts):
        low, high = i * width, (i + 1) * width
        height = round(inner_h * count / tallest, 1)
        beyond = low >= line
        bars.append(
            {
                "x": x(low) + 0.5,
                "y": round(HEIGHT - PAD - height, 1),
                "width": max(round(inner_w / bins - 1, 1), 1.0),
                "height": height,
                "count": count,
                "beyond": beyond,
            }
        )
        last = i == bins - 1
        rows.append({"high": p_label(low), "low": "0" if last else p_label(high), "count": count})
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "pad": PAD,
        "x_end": WIDTH - PAD,
        "y_base": HEIGHT - PAD,
        "bars": bars,
        "rows": rows,
        "tallest": tallest,
        "threshold_x": x(min(line, span)),
        # the label beside the line, on the side with room for it
        "threshold_anchor": "start" if line < span / 2 else "end",
        "threshold_label": f"{threshold:g}",
        "ticks": [{"x": x(d), "label": p_label(d)} for d in _ticks(span)],
        "total": len(log10_ps),
    }


def _ticks(span: int) -> list[int]:
    step = max(1, math.ceil(span / 5))
    return list(range(0, span + 1, step))
