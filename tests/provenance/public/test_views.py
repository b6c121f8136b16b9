"""``/verify/``: no login, four languages, its script a static file (no inline script)."""

from __future__ import annotations

import re

import pytest


def test_the_page_needs_no_login_and_names_the_published_models(published, client):
    response = client.get("/verify/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Acme Assistant" in page and "provenance/verify.js" in page
    assert "acme-main" not in page  # the key's own name stays private


def test_the_page_carries_no_inline_script(published, client):
    page = client.get("/verify/").content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page)


@pytest.mark.parametrize(
    ("language", "heading"),
    [
        ("ja", "公開"),
        ("zh-hans", "公开"),
        ("ko", "공개"),
    ],
)
def test_the_page_speaks_each_language(published, client, language, heading):
    page = client.get("/verify/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert heading in page


def test_without_published_models_the_page_says_so(db, client):
    page = client.get("/verify/").content.decode()
    assert "No model is published" in page and "disabled" in page
