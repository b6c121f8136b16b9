"""The combined claim of a text across organizations: the correction of the organizations'
own verdicts for their number (docs/public.md, "The combined claim"), and the coarse strength
each organization's answer shows (``strength_band``).

Each organization answers with its own family-wise corrected p-value
(``detector.decision.decide.CORRECTION`` over its published keys) but shows only its coarse
strength s (a band; an older organization's floor(log10 p)), so all that is known of p is
p < 10^(s+1). Asking m organizations is m more chances of a false claim, so the combined claim
corrects again (``CORRECTION``, Bonferroni over the m organizations asked, answered or not):
organization i's claim stands when m * 10^(s_i+1) <= the threshold, compared exactly in
decimal. Its combined strength is s_i + ceil(log10 m), read like a strength: the corrected p
lies below 10^(strength+1). Everything here is computed from the receipts' fields alone, so
anyone holding the receipts can compute it again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

CORRECTION = "bonferroni"
# The strength's bands: log10 of the bounds a corrected p-value is placed under (p < 1e-30,
# 1e-12, 1e-6, 1e-2). An answer's strength s says p < 10^(s+1), as a floored log10 p did, so
# the combined claim and older organizations read it unchanged.
STRENGTH_BANDS = (-30, -12, -6, -2)
WATERMARKED, NOT_WATERMARKED = "watermarked", "not_watermarked"
INCONCLUSIVE = "inconclusive"
ANSWERED = "answered"


def strength_band(log10_p: float) -> int:
    """The public strength of a watermarked answer's corrected log10 p: s with p < 10^(s+1),
    where 10^(s+1) is the tightest of ``STRENGTH_BANDS`` that holds (-1, p < 1, above every
    band). A scrubber's edit moves it only across a band's bound."""
    for bound in STRENGTH_BANDS:
        if log10_p < bound:
            return bound - 1
    return -1


def stands(strength: int, organizations: int, threshold: float) -> bool:
    """Whether a "watermarked" answer of ``strength`` (p < 10^(strength+1)) stands once
    corrected for ``organizations`` asked: m * 10^(strength+1) <= ``threshold``, exactly (the
    threshold read as the decimal its operator wrote)."""
    alpha = Fraction(repr(float(threshold)))
    return organizations * Fraction(10) ** (strength + 1) <= alpha


def combined_strength(strength: int, organizations: int) -> int:
    """The strength of a standing claim once corrected: ``strength + ceil(log10 m)``."""
    return strength + math.ceil(math.log10(organizations))


def combine(answers: Sequence[Mapping[str, Any]], threshold: float) -> dict[str, Any]:
    """The combined claim of the answers of every organization asked (each with
    ``organization``, ``status``: ``answered`` or why not, ``verdict``, ``model`` and
    ``strength``): ``verdict`` (watermarked when some organization's claim stands after the
    correction; not_watermarked when every organization answered not_watermarked; else, or
    with no answer at all, inconclusive), ``organizations`` (m), ``correction`` and
    ``supported`` (the claims that stand, with their combined strength)."""
    m = len(answers)
    supported = []
    for answer in answers:
        strength = answer.get("strength")
        if answer.get("status") != ANSWERED or answer.get("verdict") != WATERMARKED:
            continue
        if not isinstance(strength, int) or isinstance(strength, bool):
            continue
        if stands(strength, m, threshold):
            supported.append(
                {
                    "organization": answer.get("organization"),
                    "model": answer.get("model"),
                    "strength": combined_strength(strength, m),
                }
            )
    if supported:
        verdict = WATERMARKED
    elif answers and all(
        a.get("status") == ANSWERED and a.get("verdict") == NOT_WATERMARKED for a in answers
    ):
        verdict = NOT_WATERMARKED
    else:
        verdict = INCONCLUSIVE
    return {
        "verdict": verdict,
        "organizations": m,
        "correction": CORRECTION,
        "supported": supported,
    }
