"""An audit's life: submit a batch (validate every text first, take quota, store, publish in
chunks), score a chunk (the task body: keys decrypted once, rows written in bulk), finish."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from provenance.accounts.models import Team
from provenance.audits.models import Audit
from provenance.audits.selectors import audit_counts, audit_get
from provenance.checks import bulk, queue
from provenance.checks.models import Check, Status, Upload
from provenance.checks.selectors import may_delete
from provenance.checks.services.claims import checks_claim
from provenance.checks.services.deletion import texts_purge
from provenance.checks.services.results import check_fail, keys_for_scoring, results_store
from provenance.checks.services.validation import audit_texts_validate, team_required
from provenance.errors import Conflict, ProblemError
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import keys_for_check, prepare_keys
from provenance.scoring.service import KeyGroup, ScoringError, TextResult, score_text, score_texts
from provenance.usage.models import DetectionLog
from provenance.usage.services import detection_log_create, quota_consume, text_sha256
from provenance.webhooks import services as webhooks


def audit_submit(
    *,
    user: User,
    texts: Any,
    key_ids: Sequence[Any] | None = None,
    idempotency_key: str = "",
    callback_url: str = "",
) -> tuple[Audit, bool]:
    """Store an audit and queue it; returns (audit, created). A replayed Idempotency-Key
    with the same body returns the first audit; with another body it is a conflict."""
    team = team_required(user)
    if len(idempotency_key) > 200:
        raise ProblemError("Idempotency-Key is longer than 200 characters")
    items = audit_texts_validate(texts)
    keys = keys_for_check(team, key_ids)
    if callback_url:
        callback_url = webhooks.callback_url_validate(callback_url)
    digest = _request_hash(items, None if key_ids is None else [str(k) for k in key_ids])
    return audit_once(
        team,
        idempotency_key,
        digest,
        lambda: _audit_store(user, team, items, keys, idempotency_key, digest, callback_url),
    )


def audit_once(
    team: Team, idempotency_key: str, digest: str, store: Callable[[], Audit]
) -> tuple[Audit, bool]:
    """(audit, created): the audit an earlier request with this Idempotency-Key and the
    same ``digest`` made, else the one ``store()`` makes; another request under the key is a
    conflict. A concurrent request that stored first (the unique key) is answered too."""
    if idempotency_key:
        existing = audit_replay(team, idempotency_key, digest)
        if existing is not None:
            return existing, False
    try:
        return store(), True
    except IntegrityError:
        # A concurrent request with the same Idempotency-Key won the race.
        existing = audit_replay(team, idempotency_key, digest)
        if existing is None:
            raise
        return existing, False


def _request_hash(items: list[tuple[str, str]], key_ids: Sequence[Any] | None) -> str:
    canonical = json.dumps({"texts": items, "key_ids": key_ids}, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def audit_replay(team: Team, idempotency_key: str, digest: str) -> Audit | None:
    existing = Audit.objects.filter(team=team, idempotency_key=idempotency_key).first()
    if existing is not None and existing.request_hash != digest:
        raise Conflict("this Idempotency-Key was already used with a different request")
    return existing


CHECK_FIELDS = [
    "id",
    "team",
    "submitted_by",
    "audit",
    "position",
    "client_id",
    "text",
    "text_sha256",
    "key_ids",
    "threshold",
    "status",
    "failure_reason",
    "created_at",
]


@transaction.atomic
def _audit_store(
    user: User,
    team: Team,
    items: list[tuple[str, str]],
    keys: list[WatermarkKey],
    idempotency_key: str,
    digest: str,
    callback_url: str = "",
) -> Audit:
    audit = Audit.objects.create(
        team=team,
        submitted_by=user,
        idempotency_key=idempotency_key,
        request_hash=digest,
        num_texts=len(items),
        key_ids=[str(key.id) for key in keys],
        threshold=settings.PROVENANCE_THRESHOLD,
        callback_url=callback_url,
    )
    audit_items_store(audit, user, items, keys)
    return audit


def audit_items_store(
    audit: Audit,
    user: User,
    items: list[tuple[str, str]],
    keys: list[WatermarkKey],
    reserved: int = 0,
) -> None:
    """Take the quota (less the ``reserved`` texts the submission of staged files already
    took), insert the audit's checks, log the request and queue the checks once committed;
    the caller's transaction holds it all (a refusal stores nothing)."""
    if len(items) > reserved:
        quota_consume(user, len(items) - reserved)
    key_ids = [str(key.id) for key in keys]
    now = timezone.now()
    check_ids = [uuid.uuid4() for _ in items]
    rows = (
        (cid, audit.team_id, user.pk, audit.id, i, client_id, text, text_sha256(text), key_ids)
        + (audit.threshold, Status.PENDING, "", now)
        for i, (cid, (client_id, text)) in enumerate(zip(check_ids, items, strict=True))
    )
    bulk.insert_rows(Check, CHECK_FIELDS, rows)
    detection_log_create(
        user=user,
        team=audit.team,
        kind=DetectionLog.Kind.AUDIT,
        keys=keys,
        num_texts=len(items),
        audit=audit,
    )
    transaction.on_commit(lambda: audit_enqueue(audit.id, check_ids))


def audit_enqueue(audit_id: Any, check_ids: Sequence[Any]) -> int:
    """Queue an audit's checks in chunks; returns how many checks reached the broker."""
    size, queued = settings.PROVENANCE_AUDIT_CHUNK, 0
    for start in range(0, len(check_ids), size):
        chunk = [str(cid) for cid in check_ids[start : start + size]]
        if not queue.publish(queue.SCORE_AUDIT_CHUNK, str(audit_id), chunk):
            break  # the broker is down: the sweeper takes the rest
        Check.objects.filter(id__in=chunk).update(queued_at=timezone.now())
        queued += len(chunk)
    return queued


def audit_fail(audit_id: Any, reason: str, check_ids: Sequence[Any]) -> None:
    """Fail the open checks among ``check_ids`` (one chunk: other chunks may be scoring)."""
    Check.objects.filter(
        audit_id=audit_id, id__in=check_ids, status__in=[Status.PENDING, Status.RUNNING]
    ).update(status=Status.FAILED, failure_reason=reason, finished_at=timezone.now())
    audit_refresh(audit_id)


def audit_score_chunk(audit_id: Any, check_ids: list[Any], claim: str = "") -> None:
    """Score a slice of an audit (the task body; ``claim`` is its message id): keys
    decrypted once, rows written in bulk. Only the checks this task could claim are scored;
    those another live task holds are left to it."""
    audit = Audit.objects.filter(id=audit_id).only("id", "key_ids").first()
    if audit is None:
        return
    claim = claim or uuid.uuid4().hex
    checks = checks_claim(check_ids, claim, ("id", "text", "threshold"), audit_id=audit.id)
    if not checks:
        audit_refresh(audit_id)
        return
    try:
        groups = prepare_keys(keys_for_scoring(audit.key_ids))
    except ScoringError as exc:
        for check in checks:
            check_fail(check.id, str(exc))
        audit_refresh(audit_id)
        return
    results_store(_score_many(checks, groups), claim)
    audit_refresh(audit_id)


def _score_many(checks: list[Check], groups: list[KeyGroup]) -> list[tuple[Check, TextResult]]:
    try:
        results = score_texts(
            [check.text for check in checks],
            groups,
            threshold=_threshold(checks),
            reading="read",
            allow_read=_reading_allowance(checks),
        )
        return list(zip(checks, results, strict=True))
    except (ScoringError, ValueError):
        return _score_one_by_one(checks, groups)  # isolates the text that cannot be scored


# What a token's reading is taken to cost before it is read (ONNX Runtime float32 on one CPU
# core: 1.1 s per 300-token text, docs/benchmarks-power.md); the seconds actually spent are
# stored with each text (``reading_ms``) and charged from then on.
READ_SECONDS_PER_TOKEN = 0.004


def reading_spent_today(team_id: Any) -> float:
    """Seconds of reading the team's audits spent this UTC day (the texts read, as stored)."""
    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    spent = Check.objects.filter(
        audit__team_id=team_id, reading="done", finished_at__gte=start
    ).aggregate(ms=Sum("reading_ms"))["ms"]
    return float(spent or 0.0) / 1000.0


def _reading_allowance(checks: list[Check]) -> Any:
    """``allow_read`` for a chunk of an audit: a text is read while its team's audits stay
    within PROVENANCE_AUDIT_READING_SECONDS a day (what was spent, plus this chunk's reads at
    their estimated cost); past it the text keeps its model-free verdict (reading
    "skipped")."""
    budget = float(settings.PROVENANCE_AUDIT_READING_SECONDS)
    if budget <= 0 or not checks:
        return lambda _t, _n: False
    team_id = Audit.objects.filter(checks__id=checks[0].id).values_list("team_id", flat=True)[0]
    left = [budget - reading_spent_today(team_id)]

    def allow(_t: int, tokens: int) -> bool:
        cost = tokens * READ_SECONDS_PER_TOKEN
        if cost > left[0]:
            return False
        left[0] -= cost
        return True

    return allow


def _threshold(checks: list[Check]) -> float:
    thresholds = {check.threshold for check in checks}
    if len(thresholds) != 1:  # one audit has one threshold; refuse a silent mix
        raise ScoringError("the checks of one chunk carry different thresholds")
    return thresholds.pop()


def _score_one_by_one(
    checks: list[Check], groups: list[KeyGroup]
) -> list[tuple[Check, TextResult]]:
    pairs = []
    for check in checks:
        try:
            result = score_text(
                check.text, groups, threshold=check.threshold, with_tokens=False, reading="read"
            )
        except (ScoringError, ValueError) as exc:
            check_fail(check.id, str(exc))
            continue
        pairs.append((check, result))
    return pairs


def audit_refresh(audit_id: Any) -> None:
    """Mark the audit done once none of its checks is pending or running."""
    with transaction.atomic():
        open_checks = Check.objects.filter(
            audit_id=audit_id, status__in=[Status.PENDING, Status.RUNNING]
        )
        if open_checks.exists():
            Audit.objects.filter(id=audit_id, status=Status.PENDING).update(status=Status.RUNNING)
            return
        finished = (
            Audit.objects.filter(id=audit_id, num_texts__gt=0)  # none while its files are read
            .exclude(status__in=[Status.DONE, Status.FAILED])
            .update(status=Status.DONE, finished_at=timezone.now())
        )
        if finished:  # this call made the transition: the callback is sent exactly once
            audit_announce(audit_id)


def audit_announce(audit_id: Any) -> None:
    """Queue a finished audit's callback (``provenance.webhooks``), with its counts."""
    audit = Audit.objects.get(id=audit_id)
    webhooks.audit_finished(audit, audit_counts(audit))


def audit_delete(*, user: User, audit_id: Any) -> None:
    """Purge and hide an audit with all its checks (same permissions as a check)."""
    audit = audit_get(user, audit_id)
    if not may_delete(user, audit):
        raise ProblemError("only the submitter or a team admin may delete this audit", 403)
    now = timezone.now()
    with transaction.atomic():
        texts_purge(Check.objects.filter(audit=audit), now)
        Check.objects.filter(audit=audit).update(deleted_at=now)
        Audit.objects.filter(id=audit.id).update(deleted_at=now)
        Upload.objects.filter(audit=audit).delete()  # files not read yet
