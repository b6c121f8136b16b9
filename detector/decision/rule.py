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
# The share of the threshold the reading stage spends (the weighted test on a model's
# reading); the model-free stage (the Gamma test and the span scan) spends the rest. A
# hypothesis whose text is, or may be, read tests ``min(p / (1 - s), p_weighted / s)``
# (weighted Bonferroni over the two stages); at 0.5 that is ``2 min(p, p_weighted)``.
READING_SHARE = 0.5
_LOG10_MODEL_FREE = math.log10(1.0 - READING_SHARE)
_LOG10_READING = math.log10(READING_SHARE)
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


def with_weighted(
    log10_p: float, weighted_log10_p: float | None, *, reserved: bool = False
) -> float:
    """A hypothesis's decision p-value from its Gamma-side p-value (global, or localized) and,
    when a model read the text, the weighted test's: ``min(p / (1 - s), p_weighted / s)`` with
    ``s = READING_SHARE`` (weighted Bonferroni over the two stages; ``2 min(p, p_weighted)`` at
    0.5). ``reserved``: the text may still be read (the model-free stage of an adaptive
    decision, or a reading that was due and not taken), so the Gamma side alone is
    ``p / (1 - s)``: the reading's share stays set aside. Without a reading and not reserved,
    ``p`` itself (no reading was ever possible)."""
    if weighted_log10_p is None and not reserved:
        return log10_p
    own = log10_p - _LOG10_MODEL_FREE
    if weighted_log10_p is not None:
        own = min(own, weighted_log10_p - _LOG10_READING)
    return min(0.0, own)


def model_free_level_log10(reserved: bool) -> float:
    """log10 of the share of a hypothesis's level the model-free tests get: ``1 - s`` when a
    reading is or may be taken (``with_weighted``), else 1."""
    return _LOG10_MODEL_FREE if reserved else 0.0


def decided_by(log10_p: float, weighted_log10_p: float | None) -> str:
    """``gamma`` or ``weighted``: the side of ``with_weighted`` that gave the smaller
    p-value."""
    if weighted_log10_p is None:
        return "gamma"
    if weighted_log10_p - _LOG10_READING < log10_p - _LOG10_MODEL_FREE:
        return "weighted"
    return "gamma"


def too_short(num_tokens: Iterable[int]) -> bool:
    """Whether a text of ``num_tokens`` tokens (one count per tokenizer it is read with, taken
    lazily: the first count of at least ``MIN_TOKENS`` ends the question) is too short to test:
    under ``MIN_TOKENS`` under every tokenizer, or read with none."""
    return all(n < MIN_TOKENS for n in num_tokens)
