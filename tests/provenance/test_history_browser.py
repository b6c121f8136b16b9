"""Chromium walks the history's filters and search with the keyboard, pages through the
results with the filters kept, and reads the keys page's calibration charts, in English and
in Japanese; screenshots go to $PROVENANCE_SCREENSHOTS when set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from provenance.checks.models import Check
from tests.provenance.checks.test_filters import history_row
from tests.provenance.chromium import connected, csp_watched_page
from tests.provenance.keys.test_selectors import finished_calibration

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Per language: the verdict filter's watermarked option, and the count line of 2 checks.
LANGUAGES = {"en": ("watermarked", "2 checks"), "ja": ("透かしあり", "2 件の判定")}


@pytest.fixture
def history(cast, alice_key):
    alice, bob = cast["alice"], cast["bob"]
    rows = [
        history_row(alice, verdict="watermarked", key=alice_key, filename="essay-jane.docx"),
        history_row(bob, verdict="watermarked", key=alice_key, days_ago=3, filename="b.pdf"),
        history_row(bob, verdict="not_watermarked", key=alice_key, filename="essay-tom.docx"),
        history_row(alice, verdict="inconclusive", client_id="post-41"),
    ]
    finished_calibration(alice_key, assisted=True)
    return rows


def _screenshots(tmp_path: Path) -> Path:
    directory = Path(os.environ.get("PROVENANCE_SCREENSHOTS") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _signed_in(browser, base: str, language: str):
    context = browser.new_context(locale=language, viewport={"width": 1100, "height": 900})
    page = csp_watched_page(context)
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.wait_for_selector("#id_text")
    return context, page


def _listed(page) -> set[str]:
    return {link.text_content() for link in page.locator("table.grid tbody a").all()}


def test_a_user_filters_and_searches_the_history_and_reads_the_key_charts(
    live_server, cast, alice_key, history, chromium, tmp_path, monkeypatch
):
    from provenance.checks import views

    monkeypatch.setattr(views, "HISTORY_PAGE", 1)  # two watermarked checks: two pages
    directory = _screenshots(tmp_path)
    marked = {str(history[0].id), str(history[1].id)}
    with connected(chromium) as browser:
        for language, (option, count) in LANGUAGES.items():
            context, page = _signed_in(browser, live_server.url, language)
            page.goto(f"{live_server.url}/checks/")
            assert page.get_attribute("html", "lang") == language
            assert page.locator("#history-filters label").count() == 5  # no submitter: no admin
            # The verdict by its label, then Tab to the button and Enter: the keyboard's way.
            label = page.text_content("label[for=id_verdict]")
            page.get_by_label(label, exact=True).select_option(label=option)
            page.focus("#id_q")
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "filter-submit"
            page.keyboard.press("Enter")
            page.wait_for_url("**verdict=watermarked**")
            assert page.text_content("#history-count").strip() == count
            first = _listed(page)
            assert len(first) == 1 and first <= marked
            page.click("a[rel=next]")  # the next page keeps the filter
            page.wait_for_url("**page=2**")
            assert "verdict=watermarked" in page.url
            assert _listed(page) == marked - first
            page.screenshot(path=str(directory / f"history-{language}.png"), full_page=True)

            # A search typed into the box and sent with Enter.
            page.goto(f"{live_server.url}/checks/")
            page.focus("#id_q")
            page.keyboard.type("essay")
            page.keyboard.press("Enter")
            page.wait_for_url("**q=essay**")
            ids = {str(history[0].id), str(history[2].id)}
            found = set()
            while True:
                found |= _listed(page)
                if page.locator("a[rel=next]").count() == 0:
                    break
                with page.expect_navigation():
                    page.click("a[rel=next]")
            assert found == ids

            page.goto(f"{live_server.url}/keys/")
            rates = page.locator(f"#fpr-chart-{alice_key.id}")
            assert rates.is_visible() and rates.get_attribute("role") == "img"
            assert rates.locator("circle.rate").count() == 4
            assert rates.locator("circle.rate.above").count() == 1
            assert page.locator(f"#power-chart-{alice_key.id} polyline.power").count() == 2
            described = page.text_content(f"#fpr-desc-{alice_key.id}")
            assert "0.0400" in described and "0.01" in described
            page.locator(f"#calibration-{alice_key.id}").screenshot(
                path=str(directory / f"key-calibration-{language}.png")
            )
            page.screenshot(path=str(directory / f"keys-{language}.png"), full_page=True)
            assert page.csp_violations == [], "the pages broke their own CSP"
            context.close()
    assert (directory / "history-ja.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Check.objects.count() == 4  # reading never wrote
