"""Chromium pastes texts into the running product (live server + real worker) and reads the
verdict and heatmap, as a user would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.provenance.chromium import connected, csp_watched_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_page(chromium):
    """A page in a fresh context of the session's Chromium (tests/provenance/chromium.py)."""
    with connected(chromium) as browser:
        context = browser.new_context()
        page = csp_watched_page(context)
        yield page
        context.close()
    assert page.csp_violations == [], "the pages broke their own CSP"


def _screenshot(page, fallback_dir: Path) -> Path:
    """The whole page as a PNG: into $PROVENANCE_SCREENSHOTS when set (README's picture,
    docs/result-page.png, comes from there), else into the test's temporary directory."""
    directory = Path(os.environ.get("PROVENANCE_SCREENSHOTS") or fallback_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "result-page.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _check(page, base: str, text: str) -> None:
    page.goto(f"{base}/")
    page.fill("#id_text", text)
    page.click("#check-submit")
    page.wait_for_selector("#verdict")


def test_a_user_pastes_texts_and_sees_verdicts_and_heatmaps(
    celery_worker, live_server, cast, alice_key, wm_text, human_text, browser_page, tmp_path
):
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.wait_for_selector("#id_text")

    _check(page, live_server.url, wm_text)
    assert page.get_attribute("#verdict", "data-verdict") == "watermarked"
    page.wait_for_selector("#heatmap[data-ready]")  # built by app.js from the compact data
    assert page.text_content("#heatmap") == wm_text
    hot = page.locator("#heatmap .tok.h3, #heatmap .tok.h4").count()
    tokens = page.locator("#heatmap .tok").count()
    assert tokens > 100 and hot > tokens / 2
    assert page.locator("#evidence-chart polyline").count() == 1
    assert page.locator("#heatmap .tok.in-span").count() > 0  # the localized span, framed
    page.locator("#heatmap .tok").nth(10).hover()
    info = page.text_content("#token-info")
    assert info.startswith("token ") and "score" in info and "context" in info
    assert page.get_attribute("#heatmap .tok >> nth=10", "title") == info
    assert _screenshot(page, tmp_path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    _check(page, live_server.url, human_text)
    # About 125 scored tokens: too few to clear a text of unknown kind, so not a clean bill.
    assert page.get_attribute("#verdict", "data-verdict") == "inconclusive"
    assert "tokens could be scored" in page.text_content("#verdict-reason")
    page.wait_for_selector("#heatmap[data-ready]")
    hot = page.locator("#heatmap .tok.h3, #heatmap .tok.h4").count()
    cool = page.locator("#heatmap .tok.h0, #heatmap .tok.h1").count()
    assert cool > hot


def test_the_csp_holds_on_the_api_docs_and_the_listener_sees_a_violation(
    live_server, cast, browser_page
):
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info", timeout=30_000)  # rendered from local assets
    page.goto(f"{live_server.url}/keys/")
    assert page.csp_violations == []
    # The listener works: markup with an inline style attribute is refused and reported.
    page.evaluate(
        "document.body.insertAdjacentHTML('beforeend', '<b style=\\'color: red\\'>x</b>')"
    )
    page.wait_for_timeout(300)
    assert any("style-src" in text for text in page.csp_violations)
    page.csp_violations.clear()


def test_the_heatmap_cuts_tokens_where_the_server_did_with_emoji_and_line_breaks(
    celery_worker, live_server, cast, alice_key, browser_page
):
    from provenance.checks.models import Check

    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.wait_for_selector("#id_text")
    # About 2,500 tokens: three blocks, built as they come near the screen.
    _check(page, live_server.url, "Zeile 🙂 eins\nund <zwei> & drei 🚀🚀 vier\n" * 100)
    page.wait_for_selector("#heatmap[data-ready]")
    blocks = page.locator("#heatmap .blk")
    assert blocks.count() == 3 and blocks.nth(2).locator(".tok").count() == 0  # off screen
    for k in range(3):
        blocks.nth(k).scroll_into_view_if_needed()
    page.wait_for_function(
        "[...document.querySelectorAll('#heatmap .blk')].every(b => b.querySelector('.tok'))"
    )
    check = Check.objects.get(id=page.url.rstrip("/").rsplit("/", 1)[1])
    assert "\r\n" in check.text  # the form sends CRLF; the page must keep every character
    assert page.text_content("#heatmap") == check.text
    expected, shown = [], 0
    for start, end in check.token_data["offsets"]:
        if start >= shown:  # overlapping byte-fallback pieces are shown once
            expected.append(check.text[start:end])
            shown = end
    spans = page.eval_on_selector_all("#heatmap .tok", "els => els.map(e => e.textContent)")
    assert spans == expected


def test_the_result_page_of_a_long_text_reads_whole_with_javascript_off(
    live_server, cast, alice_key, wm_text, human_text, chromium
):
    from provenance.checks.services import check_create, check_score

    text = "\n\n".join([wm_text, *(f"{i}. {human_text}" for i in range(30))])  # ~9k tokens
    check = check_create(user=cast["alice"], text=text)
    check_score(check.id)
    with connected(chromium) as browser:
        page = browser.new_context(java_script_enabled=False).new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "alice-pass-123")
        page.click("button[type=submit]")
        page.goto(f"{live_server.url}/checks/{check.id}/")
        assert page.get_attribute("#verdict", "data-verdict") == "watermarked"
        heatmap = page.locator("#heatmap")
        # No script ran: no token spans, and the plain text is on screen, every character.
        assert heatmap.locator(".tok").count() == 0 and heatmap.get_attribute("data-ready") is None
        assert heatmap.is_visible() and heatmap.text_content() == text
        assert heatmap.inner_text().split() == text.split()  # rendered, not hidden by CSS
        assert heatmap.bounding_box()["height"] > 1000  # laid out as lines of text
