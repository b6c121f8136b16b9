"""A p-value written from its log10 (the pages' ``pvalue`` filter and the heatmap's tooltips)."""

from __future__ import annotations

import math


def pvalue(log10_p: float | None) -> str:
    """A p-value from its log10, readable far below float64's range (1e-300 and less)."""
    if log10_p is None:
        return "–"
    if log10_p > -4:
        return f"{10.0**log10_p:.4g}"
    exponent = math.floor(log10_p)
    mantissa = 10.0 ** (log10_p - exponent)
    return f"{mantissa:.2f}e{exponent}"
