"""The decision's rule, written once: when a p-value flags a text, how the weighted test
joins the Gamma test, which of the two a p-value rests on, and when a text is too short to be
tested at all (``MIN_TOKENS``, ``too_short``).

Every surface that states a verdict (``detector.decision.family``, ``detector.decision.decide``,
the signed report's verifier, the Gamma figures of ``Decision.summary``) asks these functions;
the evidence stage (``detector.evidence``) computes scores, p-values and spans only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

LOG10_2 = math.log10(2.0)
# The fewest tokens a text must have, under at least one tokenizer it is read with, for an
# answer that may be given untested to be tested: public verification answers a shorter text
# inconclusive without testing it (and its discovery document publishes this figure).
MIN_TOKENS = 16


def threshold_log10(threshold: float) -> float:
    """log10 of the largest p-value ``flags`` calls watermarked at ``threshold``: the line a
    chart of corrected p-values draws."""
    return math.log10(threshold)


def flags(log10_p: float, threshold: float, num_scored: int) -> bool:
    """The watermark rule: a p-value at or under ``threshold``, with at least one token
    scored."""
    return bool(num_scored > 0 and log10_p <= threshold_log10(threshold))


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


def too_short(num_tokens: Iterable[int]) -> bool:
    """Whether a text of ``num_tokens`` tokens (one count per tokenizer it is read with, taken
    lazily: the first count of at least ``MIN_TOKENS`` ends the question) is too short to test:
    under ``MIN_TOKENS`` under every tokenizer, or read with none."""
    return all(n < MIN_TOKENS for n in num_tokens)
