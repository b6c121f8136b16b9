"""``/verify/``: no login, four languages, its script a static file (no inline script)."""

from __future__ import annotations

import re

import pytest

from detector.decision import combined


def test_the_page_needs_no_login_and_names_the_published_models(published, client):
    response = client.get("/verify/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Acme Assistant" in page and "provenance/verify.js" in page
    assert "acme-main" not in page  # the key's own name stays private


def test_the_page_carries_no_inline_script(published, client):
    page = client.get("/verify/").content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page)


def test_the_page_names_the_combined_claims_correction_from_the_library(
    published, client, monkeypatch
):
    page = client.get("/verify/").content.decode()
    assert f"organizations asked, {combined.CORRECTION.capitalize()}-corrected" in page
    monkeypatch.setattr(combined, "CORRECTION", "sidak")
    assert "organizations asked, Sidak-corrected" in client.get("/verify/").content.decode()


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


@pytest.mark.parametrize("language", ["en", "ja", "zh-hans", "ko"])
def test_the_page_links_the_key_set_and_the_discovery_document(db, client, language):
    page = client.get("/verify/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert '<a href="/.well-known/jwks.json">' in page
    assert '<a href="/.well-known/provenance.json">' in page


def test_without_published_models_the_page_says_so(db, client):
    page = client.get("/verify/").content.decode()
    assert "No model is published" in page and "disabled" in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "ja", "zh-hans", "ko"])
def test_chromium_solves_the_proof_of_work_and_shows_the_answer(
    live_server, chromium, alice_key, wm_text, language, settings, tmp_path
):
    import os
    from pathlib import Path

    from provenance.keys.services import key_publish
    from tests.provenance.chromium import connected

    settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER = 20_000
    key_publish(key=alice_key, public_name="Acme Assistant")
    with connected(chromium) as browser:
        context = browser.new_context(
            locale=language, extra_http_headers={"Accept-Language": language}
        )
        page = context.new_page()
        page.set_default_timeout(30_000)
        blocked: list[str] = []
        page.on(
            "console", lambda m: blocked.append(m.text) if "Content Security" in m.text else None
        )
        page.goto(f"{live_server.url}/verify/")
        page.fill("#id_text", wm_text)
        page.click("#verify-submit")
        page.wait_for_selector("#verify-answer:not([hidden])")
        assert page.inner_text("#verify-model") == "Acme Assistant"
        assert page.input_value("#verify-receipt").count(".") == 2
        directory = Path(os.environ.get("PROVENANCE_SCREENSHOTS") or tmp_path)
        page.screenshot(path=str(directory / f"verify-{language}.png"), full_page=True)
        context.close()
    assert blocked == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_chromium_shows_one_line_per_peer_and_the_combined_claim(
    live_server, chromium, alice_key, wm_text, settings, fake
):
    from provenance.keys.services import key_publish
    from tests.provenance.chromium import connected

    settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER = 20_000
    key_publish(key=alice_key, public_name="Acme Assistant")
    fake.trust()
    # the page's checks are anonymous: only a peer with a partner key is asked for them
    settings.PROVENANCE_PUBLIC_PEER_KEYS = {settings.PROVENANCE_PUBLIC_PEERS[0]: "pvp_fake"}
    with connected(chromium) as browser:
        context = browser.new_context(locale="ja", extra_http_headers={"Accept-Language": "ja"})
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{live_server.url}/verify/")
        page.fill("#id_text", wm_text)
        page.click("#verify-submit")
        page.wait_for_selector("#verify-peers:not([hidden])")
        assert page.inner_text("#verify-model") == "Acme Assistant"  # the local answer
        (row,) = page.query_selector_all("#verify-peer-lines tr")
        cells = [cell.inner_text() for cell in row.query_selector_all("td")]
        assert cells == ["Fake", "透かしあり", "Fake model", "p < 10^-29"]
        assert page.inner_text("#verify-combined-m") == "2"
        assert "Fake (Fake model, p < 10^-28)" in page.inner_text("#verify-combined")
        context.close()
