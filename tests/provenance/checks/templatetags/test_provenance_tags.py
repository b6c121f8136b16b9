"""The templates' filters: p-values far below float64's range (``provenance.lib.pvalues``), and
text whose DOM text keeps every character (offsets of the heat map depend on it)."""

from __future__ import annotations

from django.template import Context, Template

from provenance.checks.templatetags.provenance_tags import exact_text


def test_exact_text_escapes_html_and_keeps_carriage_returns():
    assert exact_text('<b>"a"</b>\r\nb & c') == "&lt;b&gt;&quot;a&quot;&lt;/b&gt;&#13;\nb &amp; c"
    assert exact_text("") == ""


def test_the_filters_load_in_a_template():
    template = Template("{% load provenance_tags %}{{ p|pvalue }}|{{ t|exact_text }}")
    assert template.render(Context({"p": -7.0, "t": "x\r<y"})) == "1.00e-7|x&#13;&lt;y"
