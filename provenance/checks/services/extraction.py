"""An uploaded document's check: the web process stages the file and a worker reads it.

The request checks only what costs nothing (the file's type by name, its size), takes the
quota, logs the request and stores the check pending with no text beside a staged ``Upload``
holding the bytes; the scoring task (``check_score``) reads the document before it scores,
in the worker. A document the worker refuses fails its check with the refusal's stable code
(``failure_code``: ``document_corrupt``...) and message, no text stored; the staged bytes are
deleted either way, in the transaction that stores the outcome. Task messages carry the
check's id only, never the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from provenance.checks import queue
from provenance.checks.models import Check, Status, Surface, Upload
from provenance.checks.services.claims import held
from provenance.checks.services.validation import (
    document_limits,
    document_precheck,
    document_problem,
    team_required,
    text_validate,
)
from provenance.errors import ProblemError
from provenance.keys.selectors import keys_for_check
from provenance.lib import documents
from provenance.usage.models import DetectionLog
from provenance.usage.services import detection_log_new, quota_consume, text_sha256


def check_document_create(
    *,
    user: User,
    filename: str,
    content: bytes,
    key_ids: Sequence[Any] | None = None,
    surface: str = Surface.PAGE,
) -> Check:
    """Store a pending check of an uploaded document and queue it; the worker reads the
    file. An unsupported type or a file over the size limit is refused here (400/413, as
    before), storing nothing."""
    team = team_required(user)
    name = document_precheck(filename, len(content))
    keys = keys_for_check(team, key_ids)
    check = Check(
        team=team,
        submitted_by=user,
        text="",
        filename=name[:255],
        surface=surface,
        key_ids=[str(key.id) for key in keys],
        threshold=settings.PROVENANCE_THRESHOLD,
        queued_at=timezone.now(),
    )
    log = detection_log_new(
        user=user, team=team, kind=DetectionLog.Kind.CHECK, keys=keys, num_texts=1, check=check
    )
    with transaction.atomic():
        quota_consume(user, 1)
        check.save(force_insert=True)
        log.save(force_insert=True)
        Upload.objects.create(
            check_run=check, kind=Upload.Kind.DOCUMENT, filename=name[:255], content=content
        )
        transaction.on_commit(lambda: queue.check_publish(check))
    return check


def check_text_read(check: Check, claim: str) -> bool:
    """In the scoring task, before scoring a check with no text: read its staged document
    and store the text (``check.text`` is set), or fail the check with the refusal. Whether
    there is a text to score; a check whose claim was taken over is left to its new holder."""
    upload = Upload.objects.filter(check_run_id=check.id).first()
    if upload is None:  # nothing staged: scored as it stands (an empty text fails)
        return True
    try:
        document = documents.extract(upload.filename, bytes(upload.content), document_limits())
        text = text_validate(document.text)
    except documents.DocumentError as exc:
        return _refuse(check, claim, document_problem(exc))
    except ProblemError as problem:
        return _refuse(check, claim, problem)
    digest = text_sha256(text)
    with transaction.atomic():
        if not held([check.id], claim).update(text=text, text_sha256=digest):
            return False
        DetectionLog.objects.filter(check_run_id=check.id).update(text_sha256=digest)
        Upload.objects.filter(id=upload.id).delete()
    check.text = text
    return True


def _refuse(check: Check, claim: str, problem: ProblemError) -> bool:
    with transaction.atomic():
        refused = held([check.id], claim).update(
            status=Status.FAILED,
            failure_code=problem.code,
            failure_reason=problem.message,
            finished_at=timezone.now(),
        )
        if refused:
            Upload.objects.filter(check_run_id=check.id).delete()
    return False
