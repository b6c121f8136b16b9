"""Oracle tiers: what a team's answers reveal.

The detector is an oracle for scrubbing and forging: exact p-values and per-token scores tell
an attacker which edits move a text across the threshold (detection-oracle attacks). An
``auditor`` team sees everything; a ``basic`` team sees the verdict, spans and p-values
rounded down to their power of ten, and no per-token data. One redaction serves the API,
exports, ``/detect``, streams and the pages, so no route can forget a field.
"""

from __future__ import annotations

import math
from typing import Any

LOG10_FIELDS = frozenset(
    {
        "log10_p",
        "adjusted_log10_p",
        "decision_log10_p",
        "log10_p_anytime",
        "weighted_log10_p",
        "vllm_log10_p",  # the plain Gamma figures as vLLM computes them (``gamma``)
    }
)
P_FIELDS = frozenset({"p_value", "vllm_p_value"})
HIDDEN_VALUES = frozenset({"score", "vllm_score", "log10_e_value"})  # kept as null: the shape stays
PER_TOKEN = frozenset({"heatmap", "token_data", "tokens", "scores", "chart", "offsets"})


def round_log10(log10_p: float | None) -> float | None:
    """A log10 p-value rounded down to an integer (p to its power of ten)."""
    return None if log10_p is None else float(math.floor(log10_p))


def round_p(p: float | None) -> float | None:
    if p is None or p <= 0.0:
        return p
    return 10.0 ** math.floor(math.log10(p))


def redact(value: Any) -> Any:
    """A basic-tier copy of an answer (dicts and lists, any depth)."""
    if isinstance(value, list):
        return [redact(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in PER_TOKEN:
            continue
        if key in LOG10_FIELDS and isinstance(item, (int, float)):
            out[key] = round_log10(item)
        elif key in P_FIELDS and isinstance(item, (int, float)):
            out[key] = round_p(item)
        elif key in HIDDEN_VALUES:
            out[key] = None
        else:
            out[key] = redact(item)
    return out


def basic_view(check: Any, hypotheses: list[Any]) -> None:
    """Round a check and its hypotheses for a basic-tier page (unsaved model instances)."""
    check.token_data = None  # no heatmap, no chart
    check.log10_p, check.p_value = round_log10(check.log10_p), round_p(check.p_value)
    check.spans = redact(check.spans)  # each span's sentence on the page states its p
    for h in hypotheses:
        h.score = None
        h.log10_p, h.p_value = round_log10(h.log10_p), round_p(h.p_value)
        h.adjusted_log10_p = round_log10(h.adjusted_log10_p)
        h.decision_log10_p = round_log10(h.decision_log10_p)
        h.weighted_log10_p = round_log10(h.weighted_log10_p)
