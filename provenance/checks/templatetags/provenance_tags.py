from __future__ import annotations

import math

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def pvalue(log10_p: float | None) -> str:
    """A p-value from its log10, readable far below float64's range (1e-300 and less)."""
    if log10_p is None:
        return "–"
    if log10_p > -4:
        return f"{10.0**log10_p:.4g}"
    exponent = math.floor(log10_p)
    mantissa = 10.0 ** (log10_p - exponent)
    return f"{mantissa:.2f}e{exponent}"


@register.filter
def exact_text(text: str) -> SafeString:
    """HTML-escaped text whose DOM text is the stored text character for character: the
    parser turns a literal CR (CRLF from a textarea) into LF, which would shift every
    offset after it, but keeps a CR written as a character reference."""
    return mark_safe(escape(text).replace("\r", "&#13;"))
