"""The templates' filters: p-values far below float64's range, and text whose DOM text keeps
every character (offsets of the heat map depend on it)."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from provenance.checks.templatetags.provenance_tags import exact_text, pvalue


@pytest.mark.parametrize(
    ("log10_p", "shown"),
    [
        (None, "–"),
        (0.0, "1"),
        (-1.0, "0.1"),
        (-3.5, "0.0003162"),
        (-4.0, "1.00e-4"),
        (-4.5, "3.16e-5"),
        (-350.2, "6.31e-351"),  # below the smallest float64
        (-12345.0, "1.00e-12345"),
    ],
)
def test_pvalue_reads_from_the_log10(log10_p, shown):
    assert pvalue(log10_p) == shown


def test_exact_text_escapes_html_and_keeps_carriage_returns():
    assert exact_text('<b>"a"</b>\r\nb & c') == "&lt;b&gt;&quot;a&quot;&lt;/b&gt;&#13;\nb &amp; c"
    assert exact_text("") == ""


def test_the_filters_load_in_a_template():
    template = Template("{% load provenance_tags %}{{ p|pvalue }}|{{ t|exact_text }}")
    assert template.render(Context({"p": -7.0, "t": "x\r<y"})) == "1.00e-7|x&#13;&lt;y"
