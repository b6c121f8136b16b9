"""The audit pages: the team's list and its upload form (zip, several documents, CSV, read by
a worker; every refusal named on the audit's page, no text stored), one audit's progress
(and its JSON), its results sorted, filtered and paged by query parameters with a p-value
chart, deletion with a confirmation, for the submitter or a team admin only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from provenance.accounts.models import Membership
from provenance.audits import views
from provenance.audits.extraction import audit_extract
from provenance.audits.models import Audit
from provenance.audits.services import audit_score_chunk, audit_submit
from provenance.checks.models import Check, Upload
from provenance.checks.services import check_fail
from tests.provenance import documents as make


@pytest.fixture
def audit(cast, alice_key):
    texts = [{"client_id": f"essay-{i}", "text": f"essay number {i}"} for i in range(3)]
    return audit_submit(user=cast["alice"], texts=texts)[0]


def _page(client, user, url, method="get"):
    client.force_login(user)
    return getattr(client, method)(url)


def test_the_list_shows_the_teams_audits_only(client, cast, audit):
    assert str(audit.id) in _page(client, cast["bob"], "/audits/").content.decode()
    assert str(audit.id) not in _page(client, cast["charlie"], "/audits/").content.decode()


def test_the_detail_page_shows_counts_and_items(client, cast, audit):
    response = _page(client, cast["bob"], f"/audits/{audit.id}/")
    assert response.status_code == 200
    assert response.context["counts"]["open"] == 3
    assert [c.client_id for c in response.context["page"]] == ["essay-0", "essay-1", "essay-2"]
    html = response.content.decode()
    assert "essay-2" in html and 'id="delete-audit"' not in html  # bob may not delete
    assert _page(client, cast["charlie"], f"/audits/{audit.id}/").status_code == 404


def test_the_detail_view_offers_deletion_to_the_submitter(rf, cast, audit):
    request = rf.get(f"/audits/{audit.id}/")
    request.user = cast["alice"]
    html = views.audit_detail(request, audit.id).content.decode()
    assert 'id="delete-audit"' in html and "essay-0" in html


def test_signed_out_the_pages_ask_to_sign_in(client, audit):
    response = client.get(f"/audits/{audit.id}/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_deleting_asks_first_and_only_the_submitter_or_an_admin_may(client, cast, audit):
    url = f"/audits/{audit.id}/delete/"
    assert _page(client, cast["bob"], url).status_code == 403
    assert _page(client, cast["bob"], url, "post").status_code == 403
    confirm = _page(client, cast["alice"], url)
    assert confirm.status_code == 200 and Audit.objects.get(id=audit.id).deleted_at is None
    done = _page(client, cast["alice"], url, "post")
    assert done.status_code == 302 and done["Location"] == "/audits/"
    assert Audit.objects.get(id=audit.id).deleted_at is not None
    assert _page(client, cast["alice"], f"/audits/{audit.id}/").status_code == 404


def test_a_team_admin_may_delete_a_members_audit(client, cast, audit):
    Membership.objects.filter(user=cast["bob"]).update(is_admin=True)
    response = _page(client, cast["bob"], f"/audits/{audit.id}/delete/", "post")
    assert response.status_code == 302
    assert Audit.objects.get(id=audit.id).deleted_at is not None


# --- uploading an audit on the page -------------------------------------------------------


def _file(content: bytes, name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content)


def _upload(client, user, files, **fields):
    client.force_login(user)
    return client.post("/audits/", {"files": files, **fields})


def _nothing_stored() -> bool:
    return not Audit.objects.exists() and not Check.objects.exists()


def _read(response) -> Audit:
    """The audit an upload made, once a worker has read its files (the task body)."""
    audit = Audit.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/audits/{audit.id}/"
    assert audit.status == "pending" and audit.num_texts == 0 and not audit.checks.exists()
    audit_extract(audit.id)
    audit.refresh_from_db()
    return audit


def _refused(client, response, **headers) -> str:
    """The page of an audit whose files the worker refused: failed, no texts, no files."""
    audit = _read(response)
    assert audit.status == "failed" and not audit.checks.exists()
    assert not Upload.objects.exists()
    page = client.get(f"/audits/{audit.id}/", **headers)
    assert page.status_code == 200 and 'id="audit-refusals"' in page.content.decode()
    assert "data-poll" not in page.content.decode()  # finished: the page stops polling
    return page.content.decode()


def test_a_zip_uploaded_on_the_page_becomes_an_audit_of_its_documents(client, cast, alice_key):
    archive = make.zipped({"a.txt": make.txt(["first essay"]), "sub/b.docx": make.docx(["two"])})
    response = _upload(client, cast["alice"], [_file(archive, "essays.zip")])
    reading = client.get(response["Location"]).content.decode()
    assert 'id="audit-reading"' in reading
    audit = _read(response)
    rows = list(audit.checks.order_by("position").values_list("client_id", "text"))
    assert rows == [("a.txt", "first essay"), ("sub/b.docx", "two")]
    assert audit.num_texts == 2 and not Upload.objects.exists()
    assert audit.key_ids == [str(alice_key.id)]  # no key chosen: every key the team may use


def test_several_documents_at_once_become_one_audit(client, cast, alice_key):
    files = [
        _file(make.txt(["plain"]), "one.txt"),
        _file(make.html_page(["marked up"]), "two.html"),
        _file(make.pdf(["from a pdf"]), "three.pdf"),
    ]
    _read(_upload(client, cast["alice"], files))
    rows = list(Check.objects.order_by("position").values_list("client_id", "text"))
    assert rows == [("one.txt", "plain"), ("two.html", "marked up"), ("three.pdf", "from a pdf")]


def test_a_csv_becomes_one_text_per_row_under_its_id_column(client, cast, alice_key):
    content = b'post_id,body\np-1,first post\np-2,"second, with a comma"\n'
    response = _upload(
        client,
        cast["alice"],
        [_file(content, "posts.csv")],
        text_column="Body",
        id_column="post_id",
    )
    _read(response)
    rows = list(Check.objects.order_by("position").values_list("client_id", "text"))
    assert rows == [("p-1", "first post"), ("p-2", "second, with a comma")]


def test_the_chosen_keys_are_the_ones_tested(client, cast, alice_key, tokenizer_row):
    from provenance.keys.services import key_create

    other, _ = key_create(name="acme-second", team=cast["acme"], tokenizer=tokenizer_row)
    files = [_file(b"a text", "a.txt")]
    assert _upload(client, cast["alice"], files, key_ids=[str(other.id)]).status_code == 302
    assert Audit.objects.get().key_ids == [str(other.id)]


def test_an_unsupported_file_is_refused_in_the_request(client, cast, alice_key):
    files = [_file(b"fine", "ok.txt"), _file(b"\x00\x01", "sheet.xlsx")]
    response = _upload(client, cast["alice"], files)
    html = response.content.decode()
    assert response.status_code == 400
    assert "sheet.xlsx: unsupported file type" in html
    assert "ok.txt" not in html and _nothing_stored() and not Upload.objects.exists()


def test_every_file_the_worker_refuses_is_named_and_no_text_is_stored(client, cast, alice_key):
    files = [
        _file(b"fine", "ok.txt"),
        _file(make.encrypted_pdf(["x"]), "locked.pdf"),
        _file(b"  \n", "blank.txt"),
    ]
    html = _refused(client, _upload(client, cast["alice"], files))
    assert "locked.pdf: the file is password-protected" in html
    assert "blank.txt: the document contains no text" in html
    assert "ok.txt" not in html


def test_a_bad_zip_member_or_csv_refuses_the_upload(client, cast, alice_key):
    archive = make.zipped({"ok.txt": b"fine", "scan.pdf": make.image_only_pdf()})
    table = b"id,content\n1,x\n"
    files = [_file(archive, "batch.zip"), _file(table, "posts.csv")]
    html = _refused(client, _upload(client, cast["alice"], files))
    assert "scan.pdf: the PDF has no text layer" in html
    assert "posts.csv: the CSV file has no column “text”" in html


def test_the_upload_limits_are_the_apis(client, cast, alice_key, settings):
    settings.PROVENANCE_MAX_AUDIT_TEXTS = 2
    archive = make.zipped({f"{i}.txt": b"essay" for i in range(3)})
    html = _refused(client, _upload(client, cast["alice"], [_file(archive, "big.zip")]))
    assert "big.zip: more documents than an audit may hold" in html
    assert Audit.objects.get().failure_code == "document_too_many_files"
    Audit.objects.all().delete()
    settings.PROVENANCE_MAX_DOCUMENT_BYTES = 10
    response = _upload(client, cast["alice"], [_file(b"x" * 11, "long.txt")])
    assert response.status_code == 413  # the size is checked in the request
    assert "long.txt: the file is larger than the limit" in response.content.decode()
    assert _nothing_stored()


def test_an_upload_larger_than_the_api_takes_is_refused_unread(client, cast, alice_key, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    response = _upload(client, cast["alice"], [_file(b"x" * 500, "a.txt")])
    assert response.status_code == 413 and "the limit is 100 bytes" in response.content.decode()
    assert response.wsgi_request._read_started is False  # refused unread
    assert _nothing_stored()


def test_more_files_than_django_parses_asks_for_a_zip(client, cast, alice_key, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    files = [_file(b"text", f"{i}.txt") for i in range(3)]
    response = _upload(client, cast["alice"], files)
    assert response.status_code == 413 and "put more in a zip" in response.content.decode()
    assert _nothing_stored()


def test_a_refusal_is_shown_in_the_page_language(client, cast, alice_key):
    client.force_login(cast["alice"])
    response = client.post(
        "/audits/", {"files": [_file(b"  ", "blank.txt")]}, HTTP_ACCEPT_LANGUAGE="ja"
    )
    html = _refused(client, response, HTTP_ACCEPT_LANGUAGE="ja")
    assert "blank.txt: " in html and "受け付けられませんでした" in html
    assert "the document contains no text" not in html


def test_uploading_without_a_team_or_a_file_is_refused(client, cast, alice_key):
    assert _upload(client, cast["alice"], []).status_code == 400
    assert "choose at least one file" in _upload(client, cast["alice"], []).content.decode()
    assert _nothing_stored()


# --- one audit's results ------------------------------------------------------------------


@pytest.fixture
def scored(cast, alice_key, wm_text, human_text):
    """An audit of five texts: two watermarked, two human (inconclusive), one failed."""
    texts = [
        {"client_id": "d-human", "text": human_text},
        {"client_id": "a-wm", "text": wm_text},
        {"client_id": "c-short", "text": "hello there, friend"},
        {"client_id": "b-wm", "text": wm_text[: len(wm_text) * 2 // 3]},
        {"client_id": "e-broken", "text": "will fail"},
    ]
    audit = audit_submit(user=cast["alice"], texts=texts)[0]
    ids = list(audit.checks.order_by("position").values_list("id", flat=True))
    audit_score_chunk(audit.id, [str(i) for i in ids[:4]])
    check_fail(ids[4], "scoring failed (test)")
    return Audit.objects.get(id=audit.id)


def _names(response) -> list[str]:
    return [check.client_id for check in response.context["page"]]


def test_the_results_sort_by_each_column_both_ways(client, cast, scored):
    client.force_login(cast["bob"])
    url = f"/audits/{scored.id}/"
    assert _names(client.get(url)) == ["d-human", "a-wm", "c-short", "b-wm", "e-broken"]
    assert _names(client.get(url + "?sort=name")) == [
        "a-wm",
        "b-wm",
        "c-short",
        "d-human",
        "e-broken",
    ]
    assert _names(client.get(url + "?sort=-name"))[0] == "e-broken"
    by_p = _names(client.get(url + "?sort=p_value"))
    assert set(by_p[:2]) == {"a-wm", "b-wm"} and by_p[-1] == "e-broken"  # unscored: last
    assert _names(client.get(url + "?sort=-p_value"))[-1] == "e-broken"
    by_verdict = _names(client.get(url + "?sort=verdict"))
    assert set(by_verdict[:2]) == {"a-wm", "b-wm"} and by_verdict[-1] == "e-broken"
    scored_most = _names(client.get(url + "?sort=-scored"))
    assert scored_most[0] == "a-wm" and scored_most[-1] == "e-broken"


def test_the_results_filter_by_verdict_and_the_links_keep_the_filter(client, cast, scored):
    client.force_login(cast["bob"])
    response = client.get(f"/audits/{scored.id}/?verdict=watermarked&sort=p_value")
    assert sorted(_names(response)) == ["a-wm", "b-wm"]
    html = response.content.decode()
    assert f'/api/v1/audits/{scored.id}/export.csv?verdict=watermarked&amp;sort=p_value"' in html
    assert 'href="?verdict=watermarked&amp;sort=-p_value"' in html  # the column reverses
    assert _names(client.get(f"/audits/{scored.id}/?verdict=failed")) == ["e-broken"]
    inconclusive = _names(client.get(f"/audits/{scored.id}/?verdict=inconclusive"))
    assert set(inconclusive) == {"d-human", "c-short"}


def test_unknown_filters_are_ignored_on_the_page(client, cast, scored):
    client.force_login(cast["bob"])
    response = client.get(f"/audits/{scored.id}/?verdict=purple&sort=colour")
    assert response.status_code == 200 and len(_names(response)) == 5


def test_each_row_links_to_its_checks_result_page(client, cast, scored):
    client.force_login(cast["bob"])
    html = client.get(f"/audits/{scored.id}/").content.decode()
    for check in scored.checks.all():
        assert f'href="/checks/{check.id}/"' in html
    first = scored.checks.get(client_id="a-wm")
    assert client.get(f"/checks/{first.id}/").status_code == 200


def test_the_summary_counts_and_charts_the_p_values(client, cast, scored):
    client.force_login(cast["bob"])
    response = client.get(f"/audits/{scored.id}/")
    chart = response.context["chart"]
    assert chart["total"] == 4 and sum(row["count"] for row in chart["rows"]) == 4
    assert sum(bar["count"] for bar in chart["bars"] if bar["beyond"]) == 2  # the two wm
    html = response.content.decode()
    assert 'id="pvalue-chart"' in html and 'id="pvalue-threshold"' in html
    assert 'id="pvalue-table"' in html and "threshold p = 0.01" in html
    assert response.context["counts"]["watermarked"] == 2


def test_a_page_of_ten_thousand_rows_reads_one_page(client, cast, alice_key, settings):
    settings.PROVENANCE_MAX_AUDIT_TEXTS = 10_000
    texts = [{"client_id": f"t{i:05d}", "text": f"text number {i}"} for i in range(10_000)]
    audit = audit_submit(user=cast["alice"], texts=texts)[0]
    client.force_login(cast["alice"])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/audits/{audit.id}/?sort=-name&page=3")
    assert _names(response)[0] == "t09799" and len(_names(response)) == 100
    rows = [q["sql"] for q in queries.captured_queries if '"checks_check"."client_id"' in q["sql"]]
    assert rows and all("LIMIT 100" in sql for sql in rows)
    assert all('"checks_check"."text"' not in sql for sql in rows)  # not the texts
    assert 'href="?sort=-name&amp;page=4"' in response.content.decode()


def test_the_progress_json_counts_and_estimates(client, cast, alice_key):
    texts = [{"client_id": f"t{i}", "text": f"text {i}"} for i in range(4)]
    audit = audit_submit(user=cast["alice"], texts=texts)[0]
    client.force_login(cast["bob"])
    url = f"/audits/{audit.id}/progress"
    before = client.get(url).json()
    assert before["finished"] == 0 and before["total"] == 4 and before["remaining_s"] is None
    assert before["text"]["remaining"] == "unknown yet"
    Audit.objects.filter(id=audit.id).update(created_at=timezone.now() - timedelta(seconds=30))
    ids = [str(i) for i in audit.checks.order_by("position").values_list("id", flat=True)]
    audit_score_chunk(audit.id, ids[:2])
    moved = client.get(url).json()
    assert moved["finished"] == 2 and moved["status"] == "running"
    assert 29 <= moved["elapsed_s"] < 60 and moved["remaining_s"] == pytest.approx(
        moved["elapsed_s"], rel=0.01
    )
    assert moved["text"]["elapsed"].endswith(" s")
    audit_score_chunk(audit.id, ids[2:])
    done = client.get(url).json()
    assert done["status"] == "done" and done["finished"] == 4 and done["remaining_s"] == 0
    assert client.get(url, HTTP_ACCEPT_LANGUAGE="ja").json()["text"]["remaining"] != "0 s"
    client.force_login(cast["charlie"])
    assert client.get(url).status_code == 404


def test_the_page_refreshes_without_javascript_only_while_running(client, cast, alice_key):
    audit = audit_submit(user=cast["alice"], texts=[{"text": "a text"}])[0]
    client.force_login(cast["alice"])
    html = client.get(f"/audits/{audit.id}/").content.decode()
    assert '<noscript><meta http-equiv="refresh"' in html and "data-poll=" in html
    assert "audits.js" in html and "<script>" not in html
    audit_score_chunk(audit.id, [str(audit.checks.get().id)])
    html = client.get(f"/audits/{audit.id}/").content.decode()
    assert 'http-equiv="refresh"' not in html and "data-poll=" not in html


def test_durations_read_as_hours_minutes_and_seconds():
    with translation.override("en"):
        assert views.duration(5) == "5 s"
        assert views.duration(125) == "2 min 5 s"
        assert views.duration(3725) == "1 h 2 min"
    with translation.override("ja"):
        assert views.duration(125) == "2 分 5 秒"


def test_a_basic_tier_team_sees_p_values_to_their_power_of_ten(client, cast, scored):
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    client.force_login(cast["bob"])
    response = client.get(f"/audits/{scored.id}/?sort=p_value")
    shown = [c.log10_p for c in response.context["page"] if c.log10_p is not None]
    assert shown and all(float(lp).is_integer() for lp in shown)
    assert all(c.p_value is None for c in response.context["page"])
