"""A check of an uploaded document: staged by the request (cheap checks only, the id alone in
the task message), read by the scoring task, refused with its code and nothing kept."""

from __future__ import annotations

import pytest

from provenance.checks import queue
from provenance.checks.models import Check, Upload
from provenance.checks.services import (
    check_document_create,
    check_fail,
    check_score,
    refusal_problem,
)
from provenance.checks.services.claims import checks_claim
from provenance.checks.services.extraction import check_text_read
from provenance.errors import PayloadTooLarge, ProblemError
from provenance.usage.models import DetectionLog, QuotaUsage
from tests.provenance import documents as make


def test_the_request_stages_the_file_and_queues_only_the_checks_id(
    cast, alice_key, published_tasks, django_capture_on_commit_callbacks
):
    content = make.docx(["a staged essay"])
    with django_capture_on_commit_callbacks(execute=True):
        check = check_document_create(user=cast["alice"], filename="in/essay.docx", content=content)
    assert published_tasks == [(queue.SCORE_CHECK, (str(check.id),))]  # no bytes, no key
    stored = Check.objects.get()
    assert (stored.status, stored.text, stored.filename) == ("pending", "", "essay.docx")
    assert bytes(Upload.objects.get(check_run=stored).content) == content
    assert QuotaUsage.objects.get().used == 1 and DetectionLog.objects.get().text_sha256 == ""


@pytest.mark.parametrize(
    ("name", "size_limit", "code"),
    [("tool.exe", None, "document_unsupported"), ("big.txt", 10, "document_too_large")],
)
def test_what_costs_nothing_to_check_is_refused_in_the_request(
    cast, alice_key, settings, name, size_limit, code
):
    if size_limit:
        settings.PROVENANCE_MAX_DOCUMENT_BYTES = size_limit
    with pytest.raises(ProblemError) as raised:
        check_document_create(user=cast["alice"], filename=name, content=b"x" * 50)
    assert raised.value.code == code
    assert not Check.objects.exists() and not Upload.objects.exists()
    assert not QuotaUsage.objects.exists()


def test_the_task_reads_then_scores_and_keeps_no_bytes(cast, alice_key, wm_text):
    check = check_document_create(
        user=cast["alice"], filename="essay.pdf", content=make.pdf([wm_text])
    )
    check_score(check.id)
    check.refresh_from_db()
    assert check.status == "done" and check.is_watermarked and check.text == wm_text
    assert DetectionLog.objects.get().text_sha256 == check.text_sha256
    assert not Upload.objects.exists()


def test_a_text_over_the_check_limit_fails_with_its_code(cast, alice_key, settings):
    settings.PROVENANCE_MAX_TEXT_BYTES = 20
    check = check_document_create(user=cast["alice"], filename="a.txt", content=b"y" * 100)
    check_score(check.id)
    check.refresh_from_db()
    assert (check.status, check.failure_code, check.text) == ("failed", "too_large", "")
    assert "100 bytes; the limit is 20" in check.failure_reason


def test_a_task_whose_claim_was_taken_over_stores_nothing(cast, alice_key):
    check = check_document_create(user=cast["alice"], filename="a.txt", content=b"words")
    (held,) = checks_claim([check.id], "the-new-holder", ("id", "text"))
    assert check_text_read(held, "an-old-claim") is False
    check.refresh_from_db()
    assert check.text == "" and check.status == "running" and Upload.objects.exists()


@pytest.mark.parametrize(
    ("code", "status"),
    [("document_corrupt", 400), ("document_too_slow", 413), ("too_large", 413)],
)
def test_a_stored_refusal_is_the_problem_the_request_answered(code, status):
    problem = refusal_problem(code, "x.pdf: why", "x.pdf")
    assert (problem.code, problem.status_code, problem.message) == (code, status, "x.pdf: why")
    assert isinstance(problem, PayloadTooLarge) == (status == 413)


def test_a_check_failed_by_its_task_keeps_no_staged_file(cast, alice_key):
    check = check_document_create(user=cast["alice"], filename="a.txt", content=b"words")
    check_fail(check.id, "scoring exceeded its time limit")  # the task ran out of time
    assert Check.objects.get().status == "failed" and not Upload.objects.exists()
