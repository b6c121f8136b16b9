"""An audit of uploaded files: staged by the request (the audit's id alone in the task
message), read by its task once (a second delivery stores nothing twice), refused with the
refusals named and nothing kept, and found again by the sweeper when its message was lost."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from provenance.audits import uploads
from provenance.audits.extraction import (
    audit_extract,
    audit_refuse,
    audit_upload_submit,
    audits_lost,
)
from provenance.audits.models import Audit
from provenance.audits.selectors import AUDIT_WAITING, audit_queue_notice
from provenance.audits.services import audit_refresh
from provenance.checks import queue
from provenance.checks.models import Check, Upload
from provenance.errors import Conflict, ProblemError
from provenance.usage.models import DetectionLog, QuotaUsage
from tests.provenance import documents as make


def _submit(cast, files, **kwargs) -> Audit:
    return audit_upload_submit(user=cast["alice"], files=files, **kwargs)[0]


def test_the_request_stages_each_file_and_queues_only_the_audits_id(
    cast, alice_key, published_tasks, django_capture_on_commit_callbacks
):
    files = [("a.zip", make.zipped({"x.txt": b"one"})), ("b.csv", b"text\nrow\n"), ("c.md", b"m")]
    with django_capture_on_commit_callbacks(execute=True):
        audit = _submit(cast, files, text_column="text")
    assert published_tasks == [(queue.EXTRACT_AUDIT, (str(audit.id),))]
    staged = list(Upload.objects.filter(audit=audit).values_list("kind", "filename", "options"))
    columns = {"text_column": "text", "id_column": ""}
    assert staged == [("archive", "a.zip", columns), ("table", "b.csv", columns)] + [
        ("document", "c.md", columns)
    ]
    assert Upload.objects.filter(queued_at__isnull=True).count() == 0
    assert audit.num_texts == 0 and QuotaUsage.objects.get().used == 3  # one per file


def test_the_same_files_under_one_idempotency_key_are_the_same_audit(cast, alice_key):
    files = [("a.txt", b"first")]
    first = _submit(cast, files, idempotency_key="k-1")
    again, created = audit_upload_submit(user=cast["alice"], files=files, idempotency_key="k-1")
    assert again.id == first.id and created is False
    with pytest.raises(Conflict):
        _submit(cast, [("a.txt", b"other")], idempotency_key="k-1")


def test_the_task_stores_the_texts_once(cast, alice_key):
    audit = _submit(cast, [("a.txt", b"first"), ("b.txt", b"second")])
    audit_extract(audit.id)
    audit_extract(audit.id)  # delivered twice: the files are gone, nothing happens
    audit.refresh_from_db()
    rows = list(Check.objects.order_by("position").values_list("client_id", "text"))
    assert rows == [("a.txt", "first"), ("b.txt", "second")] and audit.num_texts == 2
    assert QuotaUsage.objects.get().used == 2 and DetectionLog.objects.get().num_texts == 2
    assert not Upload.objects.exists()


def test_the_quota_past_the_files_is_taken_by_the_task_and_refuses_the_audit_when_spent(
    cast, alice_key, settings
):
    settings.PROVENANCE_DAILY_QUOTA = 2
    audit = _submit(cast, [("a.zip", make.zipped({"x.txt": b"1", "y.txt": b"2", "z.txt": b"3"}))])
    assert QuotaUsage.objects.get().used == 1  # the file's text, taken by the request
    audit_extract(audit.id)
    audit.refresh_from_db()
    assert audit.status == "failed" and "daily quota exceeded" in audit.failure_reason
    assert not Check.objects.exists() and not Upload.objects.exists()
    assert QuotaUsage.objects.get().used == 1  # the refused archive keeps its text taken


def test_a_refusal_names_every_file_and_keeps_nothing(cast, alice_key):
    audit = _submit(cast, [("locked.pdf", make.encrypted_pdf(["x"])), ("t.csv", b"id\n1\n")])
    audit_extract(audit.id)
    audit.refresh_from_db()
    assert audit.status == "failed" and audit.finished_at is not None
    assert [r["code"] for r in audit.refusals] == ["document_no_text_column", "document_encrypted"]
    assert audit.failure_code == "document_no_text_column"
    assert "locked.pdf" in audit.failure_reason and "t.csv" in audit.failure_reason
    assert not Check.objects.exists() and not Upload.objects.exists()
    audit_refresh(audit.id)  # a refused audit stays failed
    assert Audit.objects.get(id=audit.id).status == "failed"


def test_a_cheap_refusal_stores_nothing(cast, alice_key):
    with pytest.raises(uploads.UploadRefused) as raised:
        _submit(cast, [("sheet.xlsx", b"x"), ("ok.txt", b"fine")])
    assert [p.code for p in raised.value.problems] == ["document_unsupported"]
    assert not Audit.objects.exists() and not Upload.objects.exists()


def test_an_audit_being_read_is_not_taken_for_finished(cast, alice_key):
    audit = _submit(cast, [("a.txt", b"first")])
    audit_refresh(audit.id)
    assert Audit.objects.get(id=audit.id).status == "pending"
    audit_refuse(audit.id, [ProblemError("why", code="document_corrupt")])
    audit_refuse(audit.id, [ProblemError("again", code="document_empty")])  # once only
    assert Audit.objects.get(id=audit.id).failure_reason == "why"


def test_the_sweeper_finds_an_audit_whose_files_no_task_will_read(cast, alice_key):
    never, lost, reading, deleted = (_submit(cast, [(f"{i}.txt", b"t")]) for i in range(4))
    old = timezone.now() - timedelta(seconds=60)
    Upload.objects.update(created_at=old)
    Upload.objects.exclude(audit=never).update(queued_at=old)
    Upload.objects.filter(audit=reading).update(started_at=timezone.now())
    Audit.objects.filter(id=deleted.id).update(deleted_at=timezone.now())
    assert audits_lost(10, backlog=None) == [never.id]  # the queue's length is unknown
    assert set(audits_lost(10, backlog=0)) == {never.id, lost.id}


def test_files_waiting_for_the_broker_say_so(cast, alice_key):
    audit = _submit(cast, [("a.txt", b"first")])  # never queued: the commit hook did not run
    assert audit_queue_notice(audit) == AUDIT_WAITING
    Upload.objects.update(queued_at=timezone.now())
    assert audit_queue_notice(audit) == ""
