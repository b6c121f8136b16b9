"""The evidence along a text: the Gamma p-value of the tokens up to each point."""

from __future__ import annotations

import numpy as np

from detector.core.config import KeyConfig
from detector.core.stats import dual_key_scale, gamma_upper_log10_many
from detector.evidence.detection import Detection


def cumulative_log10_p(
    detection: Detection, config: KeyConfig, points: int
) -> list[tuple[int, float]]:
    """(token index, log10 p of the tokens up to it) at up to ``points`` evenly spread
    positions, the last token included: the evidence as it builds up along the text."""
    n = detection.num_tokens
    if n == 0:
        return []
    sums = np.cumsum(detection.token_scores)
    counts = np.cumsum(detection.scored_mask)
    picks = np.unique(np.linspace(0, n - 1, min(n, points)).round().astype(int))
    shape, x = counts[picks].astype(np.float64), sums[picks].astype(np.float64)
    if config.algorithm == "dual_key_gumbel":  # survival's moment-matched gamma
        v = dual_key_scale(config.alpha)
        shape, x = shape / v, x / v
    return [
        (int(i), float(lp)) for i, lp in zip(picks, gamma_upper_log10_many(shape, x), strict=True)
    ]


CHART_POINTS = 80  # points of the cumulative-evidence chart; each costs one gamma tail


def heatmap_data(
    detection: Detection, offsets: np.ndarray, config: KeyConfig, points: int = CHART_POINTS
) -> dict[str, object]:
    """Per-token scores with character offsets, plus the cumulative evidence along the text
    (``cumulative_log10_p``): what a result page's heatmap and chart show."""
    return {
        "context_width": config.context_width,
        "offsets": offsets.astype(int).tolist(),
        "scores": [round(float(s), 4) for s in detection.token_scores],
        "scored": [bool(m) for m in detection.scored_mask],
        "chart": [[i, round(lp, 3)] for i, lp in cumulative_log10_p(detection, config, points)],
    }
