"""Chromium walks the audits pages as a user would: a zip of documents uploaded on /audits/
becomes an audit whose page shows its progress, then a summary with the p-value chart and a
table that sorts, filters and links to each check (English and Japanese screenshots); a
CSV with named columns becomes an audit, one without them is refused on the audit's page
once read; and a zip of 2,000 documents moves the progress bar without a reload."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from provenance.audits.extraction import audit_extract
from provenance.audits.models import Audit
from provenance.audits.services import audit_score_chunk
from tests.provenance import documents as make
from tests.provenance.chromium import connected, csp_watched_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser(chromium):
    with connected(chromium) as connection:
        yield connection


def _page(browser, locale: str = "en"):
    context = browser.new_context(locale=locale, viewport={"width": 1100, "height": 900})
    return csp_watched_page(context)


def _login(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.wait_for_selector("#id_text")


def _screenshots(tmp_path: Path) -> Path:
    directory = Path(os.environ.get("PROVENANCE_SCREENSHOTS") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _upload(page, base: str, archive: Path) -> str:
    page.goto(f"{base}/audits/")
    page.set_input_files("#id_files", str(archive))
    page.click("#audit-submit")
    page.wait_for_url(f"{base}/audits/*-*/")
    return page.url.rstrip("/").rsplit("/", 1)[1]


def test_a_zip_uploaded_in_the_browser_becomes_a_sortable_filterable_audit(
    celery_worker, live_server, cast, alice_key, wm_text, human_text, browser, tmp_path
):
    archive = tmp_path / "essays.zip"
    archive.write_bytes(
        make.zipped(
            {
                "essays/anna.txt": make.txt([wm_text]),
                "essays/ben.docx": make.docx([human_text]),
                "essays/cleo.md": make.md([wm_text[: len(wm_text) // 2]]),
                "essays/dan.html": make.html_page(["A short note from Dan."]),
            }
        )
    )
    page = _page(browser)
    _login(page, live_server.url)
    audit_id = _upload(page, live_server.url, archive)
    page.wait_for_selector("#pvalue-chart")  # the script reloads the page once it is done
    assert page.get_attribute("#audit-progress", "data-status") == "done"
    bar = page.locator("#audit-progress-bar")
    assert bar.get_attribute("value") == bar.get_attribute("max") == "4"
    assert page.locator("#pvalue-chart rect.bar.beyond").count() >= 1
    assert page.locator("#pvalue-threshold").count() == 1
    assert page.text_content("#count-watermarked").startswith("2")

    page.click("#sort-p_value")  # a column heading sorts by it
    page.wait_for_url("**sort=p_value")
    rows = page.locator("#audit-results tbody tr")
    assert rows.nth(0).get_attribute("data-verdict") == "watermarked"
    assert page.get_attribute("#audit-results th:nth-child(4)", "aria-sort") == "ascending"

    page.focus("#id_verdict")  # the filter works from the keyboard
    page.keyboard.press("ArrowDown")  # "watermarked"
    page.focus("#results-apply")
    page.keyboard.press("Enter")
    page.wait_for_url("**verdict=watermarked**")
    assert "sort=p_value" in page.url
    assert {rows.nth(i).get_attribute("data-verdict") for i in range(rows.count())} == {
        "watermarked"
    }
    assert rows.count() == 2
    assert "verdict=watermarked" in page.get_attribute("#export-csv", "href")
    shots = _screenshots(tmp_path)
    page.screenshot(path=str(shots / "audit-page-en.png"), full_page=True)

    page.click("#audit-results tbody tr:first-child a")  # a row opens its check
    page.wait_for_selector("#verdict")
    assert page.get_attribute("#verdict", "data-verdict") == "watermarked"
    assert Audit.objects.get(id=audit_id).num_texts == 4

    page.select_option("#id_language", "ja")
    page.click("#language-submit")
    page.goto(f"{live_server.url}/audits/{audit_id}/?verdict=watermarked&sort=p_value")
    assert page.get_attribute("html", "lang") == "ja"
    assert "透かしあり" in page.text_content("#count-watermarked")
    assert "しきい値" in page.text_content("#pvalue-chart")
    page.screenshot(path=str(shots / "audit-page-ja.png"), full_page=True)
    assert (shots / "audit-page-ja.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert page.csp_violations == []


def test_a_zip_of_2000_documents_moves_the_progress_bar_without_a_reload(
    quiet_redis, live_server, cast, alice_key, browser, tmp_path
):
    # Nobody consumes this Redis: the test scores the chunks itself, one at a time, and
    # watches the bar follow each.
    archive = tmp_path / "many.zip"
    archive.write_bytes(
        make.zipped(
            {f"doc-{i:04d}.txt": f"Document {i}: a short text.".encode() for i in range(2000)}
        )
    )
    page = _page(browser)
    _login(page, live_server.url)
    audit_id = _upload(page, live_server.url, archive)
    page.wait_for_selector("#audit-progress[data-poll]")
    page.evaluate("window.sameDocument = true")
    assert page.is_visible("#audit-reading")  # no texts yet: a worker reads the zip
    audit_extract(audit_id)  # what the worker does
    page.wait_for_function("() => document.getElementById('audit-progress-bar').max === 2000")
    ids = [
        str(i)
        for i in Audit.objects.get(id=audit_id)
        .checks.order_by("position")
        .values_list("id", flat=True)
    ]
    for finished in (500, 1000, 1500):
        audit_score_chunk(audit_id, ids[finished - 500 : finished])
        page.wait_for_function(
            "n => +document.getElementById('audit-progress-bar').value === n", arg=finished
        )
        assert page.evaluate("window.sameDocument") is True  # updated in place
        assert page.text_content("[data-field=finished]") == f"{finished:,}"
        assert page.text_content("[data-field=remaining]").endswith(" s")
    audit_score_chunk(audit_id, ids[1500:])
    page.wait_for_selector("#pvalue-chart")  # done: the page reloads with its results
    assert page.evaluate("window.sameDocument") is None
    assert page.text_content("[data-field=finished]") == "2,000"
    assert page.csp_violations == []


def test_a_csv_uploaded_in_the_browser_with_its_columns_named_waits_to_be_scored(
    quiet_redis, live_server, cast, alice_key, browser, tmp_path
):
    table = tmp_path / "posts.csv"
    table.write_text("post,body\np-1,first flagged post\np-2,second flagged post\n")
    page = _page(browser)
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/audits/")
    page.set_input_files("#id_files", str(table))
    page.click("#csv-options summary")  # the column fields fold open
    page.fill("#id_text_column", "body")
    page.fill("#id_id_column", "post")
    page.check(f"#audit-keys input[value='{alice_key.id}']")
    page.click("#audit-submit")
    page.wait_for_selector("#audit-progress[data-poll]")
    audit_extract(Audit.objects.get().id)  # what the worker does
    page.reload()
    assert page.get_attribute("#audit-progress-bar", "max") == "2"
    names = page.locator("#audit-results tbody tr td:first-child").all_text_contents()
    assert names == ["p-1", "p-2"]
    page.goto(f"{live_server.url}/audits/")  # a CSV without the column is refused, named
    page.set_input_files("#id_files", str(table))
    page.click("#audit-submit")
    page.wait_for_selector("#audit-progress[data-poll]")
    refused = Audit.objects.get(num_texts=0)
    audit_extract(refused.id)  # the worker refuses it; the polling page reloads and says why
    page.wait_for_selector("#audit-refusals")
    assert "posts.csv: the CSV file has no column “text”" in page.text_content("#audit-refusals")
    assert not page.is_visible("#audit-progress[data-poll]")  # finished: no more polling
    assert Audit.objects.get(id=refused.id).status == "failed" and not refused.checks.exists()
    assert page.csp_violations == []
