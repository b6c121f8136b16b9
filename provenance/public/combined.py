"""The combined claim of a check across organizations (docs/public.md, "The combined claim").

Each organization answers with its own family-wise corrected p-value (Holm over its published
keys) but shows only its coarse strength s (a band; an older peer's floor(log10 p)), so all
that is known of p is p < 10^(s+1). Asking m organizations is m more chances of a false
claim, so the combined claim corrects again, Bonferroni over the m organizations asked (the
local one and every configured peer, answered or not): organization i's claim stands when
m * 10^(s_i+1) <= the threshold. Its combined strength is s_i + ceil(log10 m), read like a
strength: the Bonferroni-corrected p lies below 10^(strength+1). Everything here is
computed from the receipts' fields alone, so anyone holding the receipts can compute it
again.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

WATERMARKED, NOT_WATERMARKED, INCONCLUSIVE = "watermarked", "not_watermarked", "inconclusive"


def combine(
    local_name: str, local: dict[str, Any], lines: list[dict[str, Any]], threshold: float
) -> dict[str, Any]:
    """The combined claim of the local answer and the peers' lines: ``verdict``
    (watermarked when some organization's claim stands after the correction;
    not_watermarked when every organization answered not_watermarked; else inconclusive),
    ``organizations`` (m), ``correction`` and ``supported`` (the claims that stand)."""
    answers = [{"organization": local_name, **local, "status": "answered"}, *lines]
    m = len(answers)
    alpha = Fraction(repr(float(threshold)))  # the decimal the operator wrote, exactly
    supported = []
    for answer in answers:
        strength = answer.get("strength")
        if answer["status"] != "answered" or answer.get("verdict") != WATERMARKED:
            continue
        if not isinstance(strength, int) or isinstance(strength, bool):
            continue
        if m * Fraction(10) ** (strength + 1) <= alpha:
            supported.append(
                {
                    "organization": answer["organization"],
                    "model": answer.get("model"),
                    "strength": strength + math.ceil(math.log10(m)),
                }
            )
    if supported:
        verdict = WATERMARKED
    elif all(a["status"] == "answered" and a.get("verdict") == NOT_WATERMARKED for a in answers):
        verdict = NOT_WATERMARKED
    else:
        verdict = INCONCLUSIVE
    return {
        "verdict": verdict,
        "organizations": m,
        "correction": "bonferroni",
        "supported": supported,
    }
