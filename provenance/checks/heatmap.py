"""Presentation of a check's per-token evidence: coloured text segments and an SVG chart.

Everything is computed on the server so the page works without JavaScript; colours are
classes, never inline styles, which the Content-Security-Policy forbids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# Score buckets: under "no watermark" a score is Exp(1) (mean 1); watermarked tokens skew high.
BUCKETS = (0.5, 1.0, 2.0, 3.0)
CHART_W, CHART_H, PAD = 600, 160, 28


@dataclass(frozen=True)
class Segment:
    text: str
    css: str  # "" for text between tokens
    title: str
    index: int | None = None
    score: float | None = None


def _bucket(score: float) -> int:
    return sum(score >= edge for edge in BUCKETS)


def segments(
    text: str, data: dict[str, Any] | None, spans: list[dict[str, Any]] | None = None
) -> list[Segment]:
    """The text cut into token spans (with class and hover title) and the gaps between;
    tokens inside a localized span also get the class ``in-span``."""
    if not data:
        return [Segment(text, "", "")]
    out: list[Segment] = []
    cursor = 0
    offsets = data["offsets"]
    ranges = [(s["start_char"], s["end_char"]) for s in spans or []]
    for i, (start, end) in enumerate(offsets):
        if start < cursor:  # overlapping offsets (byte-fallback pieces): already shown
            continue
        if start > cursor:
            out.append(Segment(text[cursor:start], "", ""))
        seg = _token_segment(text, data, i, start, end)
        if any(a <= start and end <= b for a, b in ranges):
            seg = Segment(seg.text, seg.css + " in-span", seg.title, seg.index, seg.score)
        out.append(seg)
        cursor = end
    if cursor < len(text):
        out.append(Segment(text[cursor:], "", ""))
    return out


def _token_segment(text: str, data: dict[str, Any], i: int, start: int, end: int) -> Segment:
    width = data["context_width"]
    context = [text[s:e] for s, e in data["offsets"][max(0, i - width) : i]]
    context_repr = " | ".join(repr(piece) for piece in context) or "(start of text)"
    token = text[start:end]
    if data["scored"][i]:
        score = data["scores"][i]
        title = f"token {token!r} · score {score:.2f} · context {context_repr}"
        return Segment(token, f"tok h{_bucket(score)}", title, i, score)
    title = f"token {token!r} · skipped: repeated context · context {context_repr}"
    return Segment(token, "tok skip", title, i, None)


def span_sentences(spans: list[dict[str, Any]] | None) -> list[str]:
    """One sentence per localized span: "tokens 212-347, characters 1,040-1,702, carry the
    watermark of key "X", p = ..." (positions shown 1-based and inclusive)."""
    from provenance.checks.templatetags.provenance_tags import pvalue

    return [
        f"Tokens {s['start_token'] + 1:,}–{s['end_token']:,}, characters "
        f"{s['start_char'] + 1:,}–{s['end_char']:,}, carry the watermark of key "
        f"“{s.get('key_name') or s['key_id']}”, p = {pvalue(s['log10_p'])} "
        f"({s['num_scored_tokens']:,} scored tokens)."
        for s in spans or []
    ]


def chart(data: dict[str, Any] | None, threshold: float, num_hypotheses: int) -> dict[str, Any]:
    """Polyline of -log10 p (cumulative evidence) against token index, and the threshold line
    that the strongest hypothesis must cross (Holm's first step = threshold / m)."""
    points = (data or {}).get("chart") or []
    if not points:
        return {}
    n = max(points[-1][0], 1)
    needed = -math.log10(threshold / max(num_hypotheses, 1))
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
