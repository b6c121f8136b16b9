"""Documents: text extraction per type (order kept), refusals naming the reason with nothing
kept, and watermarked text found inside each type through the API, the form and audits (read
by the task bodies, as a worker does)."""

from __future__ import annotations

import io
import time

import pytest

from provenance.audits.extraction import audit_extract
from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Check, Upload
from provenance.checks.services import check_score
from provenance.lib import documents
from provenance.usage.models import DetectionLog
from tests.provenance import documents as make

LIMITS = documents.Limits(max_bytes=1_000_000, max_pages=5)
PARAGRAPHS = [
    "Paragraph one opens the document and says where it comes from.",
    "Paragraph two follows it, with a comma, a semicolon; and a question?",
    "Paragraph three closes it.",
]


@pytest.mark.parametrize("kind", sorted(make.MAKERS))
def test_extraction_keeps_every_paragraph_in_order(kind):
    text = documents.extract(f"doc.{kind}", make.MAKERS[kind](PARAGRAPHS), LIMITS).text
    positions = [text.find(p) for p in PARAGRAPHS]
    assert -1 not in positions, text
    assert positions == sorted(positions)


@pytest.mark.parametrize("kind", ["txt", "md", "html", "docx", "pdf"])
def test_paragraphs_are_separated_by_a_blank_line(kind):
    text = documents.extract(f"doc.{kind}", make.MAKERS[kind](PARAGRAPHS), LIMITS).text
    assert "\n\n".join(PARAGRAPHS) in text


def test_a_pdf_paragraph_wrapped_over_lines_comes_back_as_one():
    long = [p * 4 for p in PARAGRAPHS]  # each wraps over two or three lines of the page
    text = documents.extract("wrapped.pdf", make.pdf(long), LIMITS).text
    assert text == "\n\n".join(long)


def test_pdf_lines_join_with_a_space_except_after_a_hyphen_or_beside_cjk():
    assert documents._pdf_unwrap(["one", "two"]) == "one two"
    assert documents._pdf_unwrap(["well-", "known"]) == "well-known"
    assert documents._pdf_unwrap(["東京の", "天気は"]) == "東京の天気は"
    assert documents._pdf_unwrap(["서울의", "날씨"]) == "서울의 날씨"  # Korean spaces words


def test_html_keeps_visible_text_only():
    text = documents.extract("page.html", make.html_page(PARAGRAPHS), LIMITS).text
    assert "ignored" not in text and text == "\n\n".join(PARAGRAPHS)


def test_html_whitespace_collapses_except_in_pre():
    page = b"<p>a  b\n c<br>d</p><pre>  x\n    y</pre>"
    assert documents.extract("p.htm", page, LIMITS).text == "a b c\nd\n\n  x\n    y"


def test_text_files_drop_a_bom_and_crlf():
    content = "\ufeffline one\r\nline two".encode()
    assert documents.extract("a.TXT", content, LIMITS).text == "line one\nline two"
    assert documents.extract("u.txt", "hé".encode("utf-16"), LIMITS).text == "hé"


def _refusal(filename: str, content: bytes, limits: documents.Limits = LIMITS):
    with pytest.raises(documents.DocumentError) as caught:
        documents.extract(filename, content, limits)
    return caught.value


@pytest.mark.parametrize(
    ("filename", "content", "code", "fragment"),
    [
        ("notes.odt", b"whatever", "unsupported", "unsupported file type"),
        ("notes", b"whatever", "unsupported", "unsupported file type"),
        ("scan.pdf", make.image_only_pdf(), "image_only", "no text layer"),
        ("locked.pdf", make.encrypted_pdf(PARAGRAPHS), "encrypted", "password-protected"),
        ("locked.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), "encrypted", "password"),
        ("half.pdf", make.pdf(PARAGRAPHS)[:300], "corrupt", "corrupt"),
        ("fake.pdf", b"hello, not a pdf", "corrupt", "not a PDF"),
        ("half.docx", make.docx(PARAGRAPHS)[:2000], "corrupt", "corrupt"),
        ("bytes.txt", b"\xff\xfe\xfa" + bytes([0xC3, 0x28]), "corrupt", "UTF-8"),
        ("latin.txt", "café".encode("latin-1"), "corrupt", "not UTF-8"),
        ("blank.docx", make.docx(["", "  "]), "empty", "no text"),
    ],
)
def test_unreadable_documents_are_refused_naming_the_reason(filename, content, code, fragment):
    error = _refusal(filename, content)
    assert error.code == code and fragment in error.message
    assert error.message.startswith(filename)


def test_size_and_page_limits_are_enforced():
    assert _refusal("big.txt", b"x" * 101, documents.Limits(100, 5)).code == "too_large"
    long_pdf = make.pdf(PARAGRAPHS, pages=3)
    error = _refusal("long.pdf", long_pdf, documents.Limits(1_000_000, 2))
    assert error.code == "too_many_pages" and "3 pages; the limit is 2" in error.message


def test_html_keeps_text_around_comments_and_hidden_elements():
    page = b"<p>a<!-- note -->b<script>x()</script>c<?pi x?>e<style>p {}</style> d</p>"
    assert documents.extract("p.html", page, LIMITS).text == "abce d"


def test_html_without_a_declared_encoding_is_read_as_utf8_and_a_declared_one_is_honoured():
    assert documents.extract("u.html", "<p>héllo 東京</p>".encode(), LIMITS).text == "héllo 東京"
    latin = '<meta charset="windows-1252"><p>caf\xe9</p>'.encode("latin-1")
    assert documents.extract("l.html", latin, LIMITS).text == "café"


def test_deeply_nested_html_does_not_recurse():
    page = b"<div>" * 50_000 + b"deep" + b"</div>" * 50_000
    assert documents.extract("deep.html", b"<p>top</p>" + page, LIMITS).text.startswith("top")


def test_a_pdf_page_past_the_parsing_budget_is_refused(monkeypatch):
    """The budget as the reader process applies it (``documents.read``: the reading itself,
    run here so that the budget can be lowered)."""
    monkeypatch.setattr(documents, "_PDF_PAGE_BUDGET", 2_000)
    deadline = time.monotonic() + 60
    assert documents.read("ok.pdf", make.dense_pdf(100), LIMITS, deadline).text == "a" * 100
    with pytest.raises(documents.DocumentError) as refused:
        documents.read("dense.pdf", make.dense_pdf(1_000), LIMITS, deadline)
    error = refused.value
    assert error.code == "too_complex" and error.too_large and "too complex" in error.message


@pytest.mark.parametrize("kind", ["pdf", "docx", "html"])
def test_reading_stops_at_the_time_limit(kind):
    content = make.MAKERS[kind](PARAGRAPHS)
    error = _refusal(f"slow.{kind}", content, documents.Limits(1_000_000, 5, max_seconds=0.0))
    assert error.code == "too_slow" and error.too_large and "longer than the limit" in error.message


@pytest.mark.parametrize("kind", ["pdf", "docx"])
def test_reading_stops_once_the_text_passes_the_check_limit(kind):
    content = make.MAKERS[kind](PARAGRAPHS * 3)
    error = _refusal(f"long.{kind}", content, documents.Limits(1_000_000, 5, max_text_bytes=150))
    assert error.code == "too_large" and "passes the limit of 150 bytes" in error.message


def test_a_docx_whose_xml_inflates_past_twice_the_size_limit_is_refused():
    padded = make.docx_with_xml_padding(PARAGRAPHS, 200_000)
    limits = documents.Limits(max_bytes=450_000, max_pages=5)  # python-docx's own: 820 kB
    assert len(padded) < limits.max_bytes
    assert documents.extract("ok.docx", make.docx(PARAGRAPHS), limits).text
    assert _refusal("padded.docx", padded, limits).code == "too_large"


# --- through the product -----------------------------------------------------------------


@pytest.fixture
def alice(api_for):
    return api_for("alice")


def _upload(content: bytes, name: str) -> io.BytesIO:
    file = io.BytesIO(content)
    file.name = name
    return file


def _nothing_stored() -> bool:
    return not Check.objects.exists() and not DetectionLog.objects.exists()


def _nothing_kept() -> bool:
    """No text and no staged file left: what a refused document leaves."""
    return not Upload.objects.exists() and not Check.objects.exclude(text="").exists()


@pytest.mark.parametrize("kind", sorted(make.MAKERS))
def test_a_watermarked_text_inside_each_type_is_detected(alice, alice_key, wm_text, kind):
    content = make.MAKERS[kind](["A short human introduction.", wm_text])
    file = _upload(content, f"essay.{kind}")
    response = alice.post("/api/v1/checks", {"file": file}, format="multipart")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["filename"] == f"essay.{kind}" and body["status"] == "pending"
    assert body["text"] == ""  # read by the worker, not in the request
    check_score(body["id"])  # the task body: reads the document, then scores its text
    done = alice.get(f"/api/v1/checks/{body['id']}").json()
    assert done["is_watermarked"] is True, done
    assert "A short human introduction." in done["text"]
    assert not Upload.objects.exists()  # the staged bytes are gone once read
    log = DetectionLog.objects.get(check_run_id=body["id"])
    assert log.text_sha256 == done["text_sha256"] != ""


def test_a_refused_upload_fails_its_check_naming_the_reason_and_keeps_nothing(alice, alice_key):
    file = _upload(make.image_only_pdf(), "scan.pdf")
    response = alice.post("/api/v1/checks", {"file": file}, format="multipart")
    assert response.status_code == 202
    check_score(response.json()["id"])
    body = alice.get(response["Location"]).json()
    assert body["status"] == "failed" and body["failure_code"] == "document_image_only"
    assert body["failure_reason"].startswith("scan.pdf: the PDF has no text layer")
    assert body["text"] == "" and body["num_hypotheses"] is None
    assert _nothing_kept()


def test_an_unsupported_type_is_refused_in_the_request(alice, alice_key):
    file = _upload(b"MZ\x90\x00", "tool.exe")
    response = alice.post("/api/v1/checks", {"file": file}, format="multipart")
    assert response.status_code == 400 and response.json()["code"] == "document_unsupported"
    assert _nothing_stored() and not Upload.objects.exists()


def test_an_oversized_upload_is_a_413(alice, alice_key, settings):
    settings.PROVENANCE_MAX_DOCUMENT_BYTES = 100
    file = _upload(b"x" * 500, "big.txt")
    response = alice.post("/api/v1/checks", {"file": file}, format="multipart")
    assert response.status_code == 413 and response.json()["code"] == "document_too_large"
    assert _nothing_stored() and not Upload.objects.exists()


def test_a_document_whose_text_passes_the_check_limit_fails_as_too_large(
    alice, alice_key, settings
):
    settings.PROVENANCE_MAX_TEXT_BYTES = 150
    file = _upload(make.pdf(PARAGRAPHS * 3), "long.pdf")
    response = alice.post("/api/v1/checks", {"file": file}, format="multipart")
    check_score(response.json()["id"])
    body = alice.get(response["Location"]).json()
    assert body["failure_code"] == "document_too_large"
    assert "long.pdf: its text passes the limit" in body["failure_reason"]
    assert _nothing_kept()


def test_text_and_file_together_are_refused(alice, alice_key):
    file = _upload(b"hello", "a.txt")
    response = alice.post("/api/v1/checks", {"file": file, "text": "hi"}, format="multipart")
    assert response.status_code == 400 and _nothing_stored()


def _audit_from(alice, archive: bytes) -> str:
    response = alice.post(
        "/api/v1/audits", {"archive": _upload(archive, "batch.zip")}, format="multipart"
    )
    assert response.status_code == 202, response.content
    assert response.json()["num_texts"] == 0  # until a worker has read the zip
    assert Upload.objects.filter(audit_id=response.json()["id"]).count() == 1
    return response.json()["id"]


def test_an_audit_from_a_zip_names_each_check_by_its_file(alice, alice_key, wm_text, human_text):
    archive = make.zipped(
        {
            "essays/one.docx": make.docx([wm_text]),
            "essays/two.txt": make.txt([human_text]),
            "essays/three.pdf": make.pdf([wm_text]),
        }
    )
    audit_id = _audit_from(alice, archive)
    audit_extract(audit_id)  # the task body: reads the zip, stores and queues the checks
    assert not Upload.objects.exists()
    audit_score_chunk(audit_id, list(Check.objects.values_list("id", flat=True)))
    assert alice.get(f"/api/v1/audits/{audit_id}").json()["num_texts"] == 3
    items = alice.get(f"/api/v1/audits/{audit_id}/items").json()["results"]
    assert [(i["client_id"], i["is_watermarked"]) for i in items] == [
        ("essays/one.docx", True),
        ("essays/two.txt", False),
        ("essays/three.pdf", True),
    ]


def test_a_zip_with_a_bad_member_fails_the_audit_with_no_texts(alice, alice_key):
    archive = make.zipped({"ok.txt": b"fine text", "locked.pdf": make.encrypted_pdf(["x"])})
    audit_id = _audit_from(alice, archive)
    audit_extract(audit_id)
    body = alice.get(f"/api/v1/audits/{audit_id}").json()
    assert body["status"] == "failed" and body["failure_code"] == "document_encrypted"
    assert "locked.pdf" in body["failure_reason"] and body["finished_at"]
    assert body["num_texts"] == 0 and _nothing_stored() and not Upload.objects.exists()


def test_the_form_checks_an_uploaded_document(client, cast, alice_key, wm_text):
    client.force_login(cast["alice"])
    file = _upload(make.docx([wm_text]), "essay.docx")
    response = client.post("/", {"text": "", "file": file})
    assert response.status_code == 302
    check = Check.objects.get()
    assert check.filename == "essay.docx" and check.status == "pending"
    check_score(check.id)
    check.refresh_from_db()
    assert check.text == wm_text
    page = client.get(response["Location"]).content.decode()
    assert "essay.docx" in page


def test_the_form_shows_a_refusal_on_the_checks_page(client, cast, alice_key):
    client.force_login(cast["alice"])
    file = _upload(make.encrypted_pdf(["x"]), "locked.pdf")
    response = client.post("/", {"text": "", "file": file})
    assert response.status_code == 302
    check_score(Check.objects.get().id)
    page = client.get(response["Location"]).content.decode()
    assert "locked.pdf: the file is password-protected" in page
    assert _nothing_kept()


def test_every_refusal_code_has_a_message_on_the_form():
    from provenance.checks.views import DOCUMENT_MESSAGES

    single = set(documents.CODES) - {"too_many_files"}  # the form takes no archive
    assert set(DOCUMENT_MESSAGES) == {f"document_{code}" for code in single}


def test_the_form_names_a_slow_document_in_the_page_language(client, cast, alice_key, settings):
    settings.PROVENANCE_DOCUMENT_SECONDS = 0.0
    client.force_login(cast["alice"])
    file = _upload(make.pdf(PARAGRAPHS), "slow.pdf")
    response = client.post("/", {"text": "", "file": file}, HTTP_ACCEPT_LANGUAGE="ja")
    assert response.status_code == 302
    check_score(Check.objects.get().id)
    page = client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "slow.pdf: ファイルの読み取りが時間の上限を超えました" in page
    assert _nothing_kept()
