"""An audit of uploaded files (a zip on the API; zips, documents and CSV files on the audits
page): the web process stages the files, a worker reads them.

The request checks only what costs nothing (``uploads.uploads_precheck``: types by name,
sizes, the number of documents), takes one text of the quota per file (429 when there is no
room: the check comes before the work, and a refused file keeps its text taken), then stores
the audit pending with no texts beside one staged ``Upload`` per file and queues
``EXTRACT_AUDIT`` with the audit's id (never a file). The worker reads every file
(``uploads.staged_texts``); then, in one transaction, the staged files are deleted, the rest
of the quota (the texts past those taken) is taken and the checks are stored and queued for
scoring as a batch of texts is. A refusal (a bad file, a limit, the quota) fails the audit
with no texts: ``failure_code`` and ``failure_reason`` as the request used to answer them,
every refused file in ``refusals``; the staged files are deleted.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from provenance.accounts.models import Team
from provenance.audits import uploads
from provenance.audits.models import Audit
from provenance.audits.services import audit_announce, audit_items_store, audit_once
from provenance.checks import queue
from provenance.checks.models import Status, Upload
from provenance.checks.services.results import keys_for_scoring
from provenance.checks.services.validation import audit_texts_validate, team_required
from provenance.errors import ProblemError
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import keys_for_check
from provenance.scoring.service import ScoringError
from provenance.usage.services import quota_consume
from provenance.webhooks import services as webhooks

logger = logging.getLogger(__name__)


def audit_upload_submit(
    *,
    user: User,
    files: Sequence[tuple[str, bytes]],
    archive: bool = False,
    key_ids: Sequence[Any] | None = None,
    idempotency_key: str = "",
    callback_url: str = "",
    text_column: str = "",
    id_column: str = "",
) -> tuple[Audit, bool]:
    """Stage uploaded (name, content) files as a pending audit and queue their reading;
    returns (audit, created). ``archive``: every file is a zip (the API's ``archive``),
    else each is of the kind its name says. What the precheck refuses raises
    ``uploads.UploadRefused`` and stores nothing. A replayed Idempotency-Key with the same
    files, keys and columns returns the first audit."""
    team = team_required(user)
    if len(idempotency_key) > 200:
        raise ProblemError("Idempotency-Key is longer than 200 characters")
    kinds = [Upload.Kind.ARCHIVE if archive else uploads.upload_kind(name) for name, _ in files]
    staged = [(kind, name, content) for kind, (name, content) in zip(kinds, files, strict=True)]
    problems = uploads.uploads_precheck([(k, n, len(c)) for k, n, c in staged])
    if problems:
        raise uploads.UploadRefused(problems)
    keys = keys_for_check(team, key_ids)
    if callback_url:
        callback_url = webhooks.callback_url_validate(callback_url)
    columns = {"text_column": text_column, "id_column": id_column}
    digest = _request_hash(staged, key_ids, columns)
    request = (idempotency_key, digest, callback_url)
    return audit_once(
        team,
        idempotency_key,
        digest,
        lambda: _staged_store(user, team, staged, keys, request, columns),
    )


def _request_hash(
    staged: list[tuple[str, str, bytes]], key_ids: Sequence[Any] | None, columns: dict[str, str]
) -> str:
    files = [[kind, name, hashlib.sha256(content).hexdigest()] for kind, name, content in staged]
    keys = None if key_ids is None else [str(k) for k in key_ids]
    canonical = json.dumps({"files": files, "key_ids": keys, "columns": columns})
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@transaction.atomic
def _staged_store(
    user: User,
    team: Team,
    staged: list[tuple[str, str, bytes]],
    keys: list[WatermarkKey],
    request: tuple[str, str, str],
    columns: dict[str, str],
) -> Audit:
    idempotency_key, digest, callback_url = request
    # Check before work: each staged file takes one text of the quota now, before any worker
    # reads it (a refused archive keeps it taken, so it cannot be sent again for free); the
    # texts past these are taken once the files are read (``_texts_store``).
    quota_consume(user, len(staged))
    audit = Audit.objects.create(
        team=team,
        submitted_by=user,
        idempotency_key=idempotency_key,
        request_hash=digest,
        num_texts=0,  # until a worker has read the files
        key_ids=[str(key.id) for key in keys],
        threshold=settings.PROVENANCE_THRESHOLD,
        callback_url=callback_url,
    )
    Upload.objects.bulk_create(
        Upload(
            audit=audit,
            position=i,
            kind=kind,
            filename=name[:255],
            content=content,
            options=columns,
        )
        for i, (kind, name, content) in enumerate(staged)
    )
    transaction.on_commit(lambda: audit_extract_enqueue([audit.id]))
    return audit


def audit_extract_enqueue(audit_ids: Sequence[Any]) -> int:
    """Queue the reading of audits' staged files; returns how many reached the broker."""
    queued = [aid for aid in audit_ids if queue.publish(queue.EXTRACT_AUDIT, str(aid))]
    Upload.objects.filter(audit_id__in=queued).update(queued_at=timezone.now())
    return len(queued)


def audit_extract(audit_id: Any) -> None:
    """Read an audit's staged files and store its texts as checks, or refuse it (the task
    body). An audit whose files are gone (read by another delivery, deleted) is left as
    it is."""
    audit = Audit.objects.filter(id=audit_id, status=Status.PENDING, deleted_at__isnull=True)
    found = audit.select_related("team", "submitted_by").first()
    staged = list(Upload.objects.filter(audit_id=audit_id).order_by("position"))
    if found is None or not staged:
        return
    Upload.objects.filter(audit_id=audit_id).update(started_at=timezone.now())
    columns = staged[0].options or {}
    files = [(upload.kind, upload.filename, bytes(upload.content)) for upload in staged]
    reserved = len(staged)  # the quota its submission took (``_staged_store``)
    del staged
    try:
        texts = uploads.staged_texts(
            files,
            text_column=columns.get("text_column", ""),
            id_column=columns.get("id_column", ""),
        )
        del files
        items = audit_texts_validate(texts)
        _texts_store(found, items, reserved)
    except uploads.UploadRefused as refused:
        audit_refuse(audit_id, refused.problems)
    except ProblemError as problem:
        audit_refuse(audit_id, [problem])


def _texts_store(audit: Audit, items: list[tuple[str, str]], reserved: int) -> None:
    user = audit.submitted_by
    if user is None:
        raise ProblemError("the account that uploaded the files is gone")
    try:
        keys = keys_for_scoring(audit.key_ids)
    except ScoringError as exc:
        raise ProblemError(str(exc)) from None
    with transaction.atomic():
        if not Upload.objects.filter(audit_id=audit.id).delete()[0]:
            return  # another delivery stored them, or the audit was deleted meanwhile
        audit_items_store(audit, user, items, keys, reserved=reserved)
        Audit.objects.filter(id=audit.id).update(num_texts=len(items))


def audit_refuse(audit_id: Any, problems: Sequence[ProblemError]) -> None:
    """Fail a pending audit whose files were refused, with no texts; its staged files go.
    The callback (if any) is sent as for a finished audit."""
    refusals: list[dict[str, Any]] = [
        {
            "code": problem.code,
            "filename": str(getattr(problem, "filename", "")),
            "message": problem.message,
            "column": str(getattr(problem, "column", "")),
            "row": int(getattr(problem, "row", 0)),
        }
        for problem in problems
    ]
    with transaction.atomic():
        Upload.objects.filter(audit_id=audit_id).delete()
        failed = Audit.objects.filter(id=audit_id, status=Status.PENDING, num_texts=0).update(
            status=Status.FAILED,
            failure_code=refusals[0]["code"] if refusals else "",
            failure_reason="; ".join(item["message"] for item in refusals),
            refusals=refusals,
            finished_at=timezone.now(),
        )
        if failed:
            audit_announce(audit_id)


def audits_lost(pending_after: float, backlog: int | None) -> list[Any]:
    """Audits whose staged files no task will read (the sweeper queues them again): never
    queued (the broker was down), queued ``pending_after`` seconds ago and not started while
    the broker's queue is empty, or started longer ago than any task may run."""
    now = timezone.now()
    lost = Q(queued_at__isnull=True, created_at__lt=now - timedelta(seconds=min(pending_after, 5)))
    if backlog == 0:
        quiet = now - timedelta(seconds=pending_after)
        lost |= Q(queued_at__lt=quiet, started_at__isnull=True)
    stale = now - timedelta(seconds=settings.PROVENANCE_SWEEP_RUNNING_AFTER)
    lost |= Q(started_at__lt=stale)
    rows = Upload.objects.filter(lost, audit__status=Status.PENDING, audit__deleted_at__isnull=True)
    return sorted(set(rows.values_list("audit_id", flat=True)), key=str)
