from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from provenance.lib.pvalues import pvalue

register = template.Library()


register.filter("pvalue", pvalue)


@register.filter
def exact_text(text: str) -> SafeString:
    """HTML-escaped text whose DOM text is the stored text character for character: the
    parser turns a literal CR (CRLF from a textarea) into LF, which would shift every
    offset after it, but keeps a CR written as a character reference."""
    return mark_safe(escape(text).replace("\r", "&#13;"))
