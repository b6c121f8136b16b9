"""Slow documents cannot pin the web: an uploaded document or archive is read by a worker,
never in the request. The request answers in a fraction of the document's reading time
(measured here on the same bytes), and the worker reads it, then scores its text; a client
that waits still gets today's answers (201 with the verdict, or the refusal's 400/413)."""

from __future__ import annotations

import io
import time

import pytest

from provenance.audits.models import Audit
from provenance.checks.models import Check, Upload
from provenance.checks.services.validation import document_limits
from provenance.lib import documents
from tests.provenance import documents as make
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _upload(content: bytes, name: str) -> io.BytesIO:
    file = io.BytesIO(content)
    file.name = name
    return file


def _slow_html(visible: str) -> bytes:
    """A few megabytes of empty elements around a short visible text: cheap to send, slow to
    read (the reader walks every element in Python)."""
    padding = b"<b></b>" * 600_000
    return b"<html><body><p>" + padding + b"</p><p>" + visible.encode() + b"</p></body></html>"


def _reading_seconds(name: str, content: bytes) -> float:
    started = time.perf_counter()
    documents.extract(name, content, document_limits())
    return time.perf_counter() - started


def _fail_if_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process is the web server: any document it reads fails the test (the worker is
    another process, untouched)."""

    def read_here(*args: object, **kwargs: object) -> None:
        pytest.fail("a document was read in the web request")

    monkeypatch.setattr(documents, "extract", read_here)


def test_a_slow_document_does_not_hold_the_request(
    celery_worker, api_for, alice_key, wm_text, monkeypatch
):
    content = _slow_html(wm_text)
    assert len(content) < document_limits().max_bytes
    reading = _reading_seconds("slow.html", content)
    assert reading > 0.5, reading  # the premise: this document is slow to read
    _fail_if_read_here(monkeypatch)
    started = time.perf_counter()
    response = api_for("alice").post(
        "/api/v1/checks", {"file": _upload(content, "slow.html")}, format="multipart"
    )
    answering = time.perf_counter() - started
    assert response.status_code == 202 and response.json()["status"] == "pending"
    # Not read here (``_fail_if_read_here``); the answer came well before a reading would
    # have (a loaded machine slows both, so only the order is asserted).
    assert answering < reading, (answering, reading)
    check_id = response.json()["id"]
    wait_until(lambda: Check.objects.get(id=check_id).status in ("done", "failed"), 120)
    check = Check.objects.get(id=check_id)
    assert check.status == "done" and check.is_watermarked is True, check.failure_reason
    assert wm_text in check.text and not Upload.objects.exists()


def test_a_slow_zip_does_not_hold_the_request(celery_worker, api_for, alice_key, monkeypatch):
    archive = make.zipped({f"essay-{i}.html": _slow_html(f"essay {i}") for i in range(3)})
    reading = _reading_seconds("essay-0.html", _slow_html("essay 0")) * 3
    _fail_if_read_here(monkeypatch)
    started = time.perf_counter()
    response = api_for("alice").post(
        "/api/v1/audits", {"archive": _upload(archive, "essays.zip")}, format="multipart"
    )
    answering = time.perf_counter() - started
    assert response.status_code == 202 and response.json()["num_texts"] == 0
    assert answering < reading, (answering, reading)  # and not read here, as above
    audit_id = response.json()["id"]
    wait_until(lambda: Audit.objects.get(id=audit_id).status == "done", 120)
    items = Check.objects.filter(audit_id=audit_id).order_by("position")
    assert [(c.client_id, c.text) for c in items] == [
        (f"essay-{i}.html", f"essay {i}") for i in range(3)
    ]
    assert not Upload.objects.exists()


def test_a_client_that_waits_gets_the_verdict_or_the_refusal_as_before(
    celery_worker, api_for, alice_key, wm_text, monkeypatch
):
    _fail_if_read_here(monkeypatch)
    alice = api_for("alice")
    good = alice.post(
        "/api/v1/checks?wait=30",
        {"file": _upload(make.docx([wm_text]), "essay.docx")},
        format="multipart",
    )
    assert good.status_code == 201, good.content
    assert good.json()["is_watermarked"] is True and good.json()["filename"] == "essay.docx"
    refused = alice.post(
        "/api/v1/checks?wait=30",
        {"file": _upload(make.image_only_pdf(), "scan.pdf")},
        format="multipart",
    )
    assert refused.status_code == 400, refused.content
    assert refused.json()["code"] == "document_image_only"
    assert refused.json()["detail"].startswith("scan.pdf: the PDF has no text layer")
    failed = Check.objects.get(filename="scan.pdf")  # what a client that did not wait reads
    assert failed.status == "failed" and failed.failure_code == "document_image_only"
    assert failed.text == "" and not Upload.objects.exists()
