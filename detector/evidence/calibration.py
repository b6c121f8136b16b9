"""The arithmetic of a key's calibration: the realized false-positive rate on human text with
an exact interval, and the tokens a watermarked text needs for a given power.

Pure functions over scipy and plain data; the web layer (``provenance/keys/calibration.py``)
collects the counts with its own decision function and stores what these return.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

TARGET_POWER = 0.8


@dataclass(frozen=True)
class Rate:
    """``flagged`` of ``texts`` human texts flagged, with a two-sided exact interval."""

    texts: int
    flagged: int
    rate: float
    low: float
    high: float

    def above(self, threshold: float) -> bool:
        """The whole interval lies above ``threshold``: the key flags human text more often
        than its threshold promises, beyond chance."""
        return self.low > threshold


def clopper_pearson(flagged: int, texts: int, confidence: float = 0.95) -> Rate:
    """The Clopper-Pearson interval of a binomial proportion (scipy's ``exact`` method):
    it covers the true rate with probability at least ``confidence`` for every rate."""
    if texts < 1 or not 0 <= flagged <= texts:
        raise ValueError("need 0 <= flagged <= texts and texts >= 1")
    ci = binomtest(flagged, texts).proportion_ci(confidence_level=confidence, method="exact")
    return Rate(texts, flagged, flagged / texts, float(ci.low), float(ci.high))


@dataclass(frozen=True)
class PowerPoint:
    """Of ``texts`` watermarked texts cut to their first ``tokens`` tokens, ``detected``
    were flagged."""

    tokens: int
    texts: int
    detected: int

    @property
    def power(self) -> float:
        return self.detected / self.texts if self.texts else 0.0


def tokens_needed(curve: Sequence[PowerPoint], power: float = TARGET_POWER) -> int | None:
    """The shortest length of the curve from which on every measured length reaches
    ``power``; None when the longest does not (more tokens than were generated are needed).
    Monotone by construction: a length that reaches ``power`` followed by one that does not
    (sampling noise on a handful of texts) does not count."""
    ordered = sorted(curve, key=lambda p: p.tokens)
    needed: int | None = None
    for point in reversed(ordered):
        if point.texts == 0 or point.power < power:
            break
        needed = point.tokens
    return needed
