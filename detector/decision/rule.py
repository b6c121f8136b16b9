"""The decision's rule, written once: when a p-value flags a text, how the weighted test
joins the Gamma test, and which of the two a p-value rests on.

Every surface that states a verdict (``detector.decision.family``, ``detector.decision.decide``,
the signed report's verifier, the Gamma figures of ``Decision.summary``) asks these functions;
the evidence stage (``detector.evidence``) computes scores, p-values and spans only.
"""

from __future__ import annotations

import math

LOG10_2 = math.log10(2.0)


def flags(log10_p: float, threshold: float, num_scored: int) -> bool:
    """The watermark rule: a p-value at or under ``threshold``, with at least one token
    scored."""
    return bool(num_scored > 0 and log10_p <= math.log10(threshold))


def with_weighted(log10_p: float, weighted_log10_p: float | None) -> float:
    """A hypothesis's decision p-value from its Gamma-side p-value (global, or localized) and,
    when a model read the text, the weighted test's: ``2 min(p, p_weighted)`` (Bonferroni over
    the two tests)."""
    if weighted_log10_p is None:
        return log10_p
    return min(0.0, LOG10_2 + min(log10_p, weighted_log10_p))


def decided_by(log10_p: float, weighted_log10_p: float | None) -> str:
    """``gamma`` or ``weighted``: the side of ``with_weighted`` that gave the smaller
    p-value."""
    if weighted_log10_p is not None and weighted_log10_p < log10_p:
        return "weighted"
    return "gamma"
