"""Presentation of a check's per-token evidence: a compact per-token string that the
page's static script (``app.js``) turns into the coloured heatmap, and an SVG chart.

The page carries the plain text, readable without JavaScript, and the scores beside it; the
script builds the token spans (colours are classes, no inline style: the CSP forbids it) and
the hover details. Server-rendered spans with titles made a 190 kB text's page 9.8 MB.
"""

from __future__ import annotations

from typing import Any

from django.utils.formats import number_format
from django.utils.translation import gettext

from detector.decision.decide import gamma_line_log10
from provenance.lib.pvalues import pvalue

CHART_W, CHART_H, PAD = 600, 160, 28
# Score classes h0..h4 (edges in hundredths, as the scores are sent): under "no watermark" a
# score is Exp(1) (mean 1); watermarked tokens skew high.
BUCKETS = (50, 100, 200, 300)


def token_triples(data: dict[str, Any] | None) -> str:
    """The per-token data as one compact string for the page's script: per token, the gap
    from the previous token's end, its length (both in characters) and its score in
    hundredths, -1 when skipped (repeated context). About 8 bytes a token where the stored
    JSON costs 35 and server-rendered spans with titles cost 200 (measured on a 45k-token
    text: benchmarks/bench_page.py)."""
    if not data:
        return ""
    out: list[int] = []
    cursor = 0
    for (start, end), score, scored in zip(
        data["offsets"], data["scores"], data["scored"], strict=True
    ):
        out += (start - cursor, end - start, round(score * 100) if scored else -1)
        cursor = end
    return ",".join(map(str, out))


def compact(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the result page needs of ``token_data``, stored beside it when a check is scored."""
    if not data:
        return None
    return {
        "context_width": data["context_width"],
        "chart": data.get("chart") or [],
        "tokens": token_triples(data),
    }


def span_ranges(spans: list[dict[str, Any]] | None) -> str:
    """Character ranges of the localized spans, "start,end,..." for the page's script, which
    frames the tokens inside them (class ``in-span``)."""
    return ",".join(f"{s['start_char']},{s['end_char']}" for s in spans or [])


def span_sentences(spans: list[dict[str, Any]] | None) -> list[str]:
    """One sentence per localized span: "tokens 212-347, characters 1,040-1,702, carry the
    watermark of key "X", p = ..." (positions shown 1-based and inclusive)."""
    sentence = gettext(
        "Tokens %(first_token)s–%(last_token)s, characters %(first_char)s–%(last_char)s, "
        "carry the watermark of key “%(key)s”, p = %(p)s (%(scored)s scored tokens)."
    )
    return [
        sentence
        % {
            "first_token": number_format(s["start_token"] + 1, force_grouping=True),
            "last_token": number_format(s["end_token"], force_grouping=True),
            "first_char": number_format(s["start_char"] + 1, force_grouping=True),
            "last_char": number_format(s["end_char"], force_grouping=True),
            "key": s.get("key_name") or s["key_id"],
            "p": pvalue(s["log10_p"]),
            "scored": number_format(s["num_scored_tokens"], force_grouping=True),
        }
        for s in spans or []
    ]


def chart(
    data: dict[str, Any] | None, threshold: float, num_hypotheses: int, *, weighted: bool = False
) -> dict[str, Any]:
    """Polyline of -log10 p (the global Gamma test's cumulative evidence) against token index,
    and the line that evidence must cross by itself for the decision to call the text
    watermarked (``detector.decision.decide.gamma_line_log10``: the Gamma test's share of
    threshold / m, halved again when the weighted test joined)."""
    points = (data or {}).get("chart") or []
    if not points:
        return {}
    n = max(points[-1][0], 1)
    needed = -gamma_line_log10(threshold, num_hypotheses, weighted=weighted)
    top = max(needed * 1.5, max(-lp for _, lp in points), 1.0)

    def xy(index: float, evidence: float) -> tuple[float, float]:
        x = PAD + (CHART_W - 2 * PAD) * index / n
        y = CHART_H - PAD - (CHART_H - 2 * PAD) * min(evidence, top) / top
        return round(x, 1), round(y, 1)

    line = " ".join(f"{x},{y}" for x, y in (xy(i, -lp) for i, lp in points))
    _, threshold_y = xy(0, needed)
    return {
        "width": CHART_W,
        "height": CHART_H,
        "pad": PAD,
        "polyline": line,
        "threshold_y": threshold_y,
        "threshold_label": f"-log10 p = {needed:.1f}",
        "top_label": f"{top:.0f}",
        "n": points[-1][0] + 1,
        "x_end": CHART_W - PAD,
        "y_base": CHART_H - PAD,
    }
