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


# The model-free decision's split of alpha between its two tests of one hypothesis: the
# global Gamma sum at GAMMA_SHARE * alpha, the span scan at the rest (weighted Bonferroni),
# chosen from the false-positive rates over 400 keys (docs/benchmarks-power.md, "The split
# between the Gamma sum and the span scan").
GAMMA_SHARE = 0.5
GAMMA_FACTOR_LOG10 = -math.log10(GAMMA_SHARE)  # what the Gamma sum's p-value is multiplied by
SCAN_FACTOR_LOG10 = -math.log10(1.0 - GAMMA_SHARE)  # and the scan's


def document_log10_p(global_log10_p: float, scan_log10_p: float) -> float:
    """A hypothesis's model-free document p-value from its global Gamma test's and its span
    scan's: ``min(p_global / GAMMA_SHARE, p_scan / (1 - GAMMA_SHARE))``, capped at 1."""
    return min(0.0, global_log10_p + GAMMA_FACTOR_LOG10, scan_log10_p + SCAN_FACTOR_LOG10)


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
