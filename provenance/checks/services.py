"""Writes for checks and audits: create (validate everything first, store, enqueue) and
score (called by the Celery tasks with ids; idempotent)."""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.utils import timezone

from provenance.accounts.models import Team
from provenance.accounts.selectors import team_for_user
from provenance.checks import bulk
from provenance.checks.models import Audit, Check, DetectionLog, Hypothesis, Status
from provenance.checks.retention import purged_cleanup
from provenance.checks.scoring import (
    KeyGroup,
    ScoringError,
    TextResult,
    prepare_keys,
    score_text,
    score_texts,
)
from provenance.checks.workers import checks_claim, checks_release_dead, held, workers_reap
from provenance.errors import Conflict, PayloadTooLarge, ProblemError
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import keys_for_check

logger = logging.getLogger(__name__)


def text_validate(text: Any, label: str = "text") -> str:
    """Reject what cannot be checked, with a message naming the problem."""
    if not isinstance(text, str):
        raise ProblemError(f"{label} must be a string")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ProblemError(f"{label} is not valid UTF-8 (lone surrogate)") from None
    if "\x00" in text:
        raise ProblemError(f"{label} contains a NUL character")
    if not text.strip():
        raise ProblemError(f"{label} is empty")
    limit = settings.PROVENANCE_MAX_TEXT_BYTES
    if size > limit:
        raise PayloadTooLarge(f"{label} is {size} bytes; the limit is {limit} bytes")
    return text


def text_sha256(text: str) -> str:
    """The digest kept after the text itself is purged (the detection log holds it too)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _team_required(user: AbstractBaseUser) -> Team:
    team = team_for_user(user)
    if team is None:
        raise ProblemError("your account belongs to no team", status_code=403)
    return team


QUEUE_DOWN = (
    "the scoring queue is unavailable; the check waits as pending and is scored when the "
    "queue is back"
)


def _enqueue(task: Any, *args: Any) -> bool:
    """Publish a task (after commit); False when the broker is down. The row stays pending
    and the sweeper (checks_sweep) enqueues it again: the database is the source of truth."""
    try:
        task.delay(*args)
    except Exception as exc:  # kombu/redis raise many types for "broker unreachable"
        logger.warning(
            "could not enqueue %s (%s); the sweeper will retry", task.name, type(exc).__name__
        )
        return False
    return True


def check_create(
    *, user: AbstractBaseUser, text: Any, key_ids: Sequence[Any] | None = None
) -> Check:
    """Store a check and queue its scoring; invalid input stores nothing. With the broker
    down the check is kept as pending (``queued_at`` stays empty) for the sweeper."""
    team = _team_required(user)
    text = text_validate(text)
    keys = keys_for_check(team, key_ids)
    with transaction.atomic():
        quota_consume(user, 1)
        check = Check.objects.create(
            team=team,
            submitted_by=user,
            text=text,
            text_sha256=text_sha256(text),
            key_ids=[str(key.id) for key in keys],
            threshold=settings.PROVENANCE_THRESHOLD,
        )
        _log(user, team, DetectionLog.Kind.CHECK, keys, 1, check=check, text=text)
        transaction.on_commit(lambda: check_enqueue([check.id]))
    check.refresh_from_db(fields=["queued_at"])
    return check


def check_enqueue(check_ids: Sequence[Any]) -> int:
    """Queue single checks; returns how many reached the broker (their queued_at is set)."""
    from provenance.checks.tasks import check_score_task

    queued = [cid for cid in check_ids if _enqueue(check_score_task, str(cid))]
    Check.objects.filter(id__in=queued).update(queued_at=timezone.now())
    return len(queued)


def queue_notice(check: Check) -> str:
    """What the API and pages say about a check that is waiting for the broker."""
    if check.status == Status.PENDING and check.queued_at is None:
        return QUEUE_DOWN
    return ""


def audit_queue_notice(audit: Audit) -> str:
    waiting = audit.checks.filter(status=Status.PENDING, queued_at__isnull=True)
    return QUEUE_DOWN.replace("the check waits", "its checks wait") if waiting.exists() else ""


def check_fail(check_id: Any, reason: str) -> None:
    Check.objects.filter(id=check_id).exclude(status=Status.DONE).update(
        status=Status.FAILED, failure_reason=reason, finished_at=timezone.now()
    )


def _ordered_keys(key_ids: list[str]) -> list[WatermarkKey]:
    wanted = [uuid.UUID(str(key_id)) for key_id in key_ids]
    found = WatermarkKey.objects.select_related("tokenizer").in_bulk(wanted)
    missing = [str(key_id) for key_id in wanted if key_id not in found]
    if missing:
        raise ScoringError(f"{len(missing)} key(s) were deleted before scoring")
    return [found[key_id] for key_id in wanted]


def check_score(check_id: Any, claim: str = "") -> None:
    """Score one check (the task body, ``claim`` its message id). Done or failed checks, and
    checks a live worker holds, are left as they are; a redelivered or re-swept task that
    races another one stores nothing twice."""
    claim = claim or uuid.uuid4().hex
    mine = checks_claim([check_id], claim, ("id", "text", "key_ids", "threshold"))
    if not mine:
        return
    check = mine[0]
    try:
        groups = prepare_keys(_ordered_keys(check.key_ids))
        result = score_text(check.text, groups, threshold=check.threshold)
    except ScoringError as exc:
        check_fail(check_id, str(exc))
        return
    _store_once([(check, result)], claim)


def _store_once(pairs: list[tuple[Check, TextResult]], claim: str) -> None:
    """Results and status "done" in one transaction, for the checks still held under
    ``claim`` (locked first: a sweeper releasing them, or another claimer, waits). A check
    whose claim was taken over (its worker was taken for dead) is left to the new holder;
    the unique (check, index) constraint stands behind this, so nothing ever doubles."""
    ids, mine = [check.id for check, _ in pairs], set()
    try:
        with transaction.atomic():
            mine = set(held(ids, claim).select_for_update().values_list("id", flat=True))
            _store_results([(check, result) for check, result in pairs if check.id in mine])
            purged_cleanup(list(mine))
    except IntegrityError:
        logger.info("results of %d check(s) were already stored by another task", len(pairs))
    if len(mine) < len(pairs):
        logger.info("%d check(s) were taken over by another task", len(pairs) - len(mine))


def _store_results(pairs: list[tuple[Check, TextResult]]) -> None:
    """Write results of scored checks, in the caller's transaction. No stale rows can exist:
    results are written atomically with status "done", and done checks are never rescored
    (a racing duplicate would hit the unique (check, index) constraint, not double up)."""
    now = timezone.now()
    bulk.insert_rows(
        Hypothesis,
        HYPOTHESIS_FIELDS,
        (_hypothesis_row(check, h) for check, result in pairs for h in result.hypotheses),
    )
    bulk.update_rows(
        Check, RESULT_FIELDS, (_result_row(check, result, now) for check, result in pairs)
    )


# started_at is not among them: the update that marks a check running sets it.
RESULT_FIELDS = [
    "status",
    "failure_reason",
    "num_hypotheses",
    "is_watermarked",
    "p_value",
    "log10_p",
    "num_tokens",
    "num_scored_tokens",
    "best_key",
    "token_data",
    "finished_at",
    "scoring_ms",
]
HYPOTHESIS_FIELDS = [
    "check_run",
    "index",
    "key",
    "key_name",
    "tokenizer",
    "tokenizer_name",
    "algorithm",
    "score",
    "num_tokens",
    "num_scored_tokens",
    "p_value",
    "log10_p",
    "adjusted_log10_p",
]


def _result_row(check: Check, result: TextResult, now: Any) -> tuple:
    best = result.hypotheses[result.best] if result.best is not None else None
    return (
        check.id,
        Status.DONE,
        "",
        len(result.hypotheses),
        result.is_watermarked,
        result.p_value,
        result.log10_p,
        best.detection.num_tokens if best else 0,
        best.detection.num_scored_tokens if best else 0,
        best.key.id if best else None,
        result.token_data,
        now,
        result.elapsed_ms,
    )


def _hypothesis_row(check: Check, h: Any) -> tuple:
    d = h.detection
    return (
        check.id,
        h.index,
        h.key.id,
        h.key.name,
        h.tokenizer.id,
        h.tokenizer.name,
        h.key.algorithm,
        d.score,
        d.num_tokens,
        d.num_scored_tokens,
        d.p_value,
        d.log10_p,
        h.adjusted_log10_p,
    )


def detect_now(*, user: AbstractBaseUser, text: Any) -> TextResult:
    """Synchronous detection for the vLLM-compatible /detect route (only the log is stored)."""
    team = _team_required(user)
    text = text_validate(text)
    keys = keys_for_check(team, None)
    with transaction.atomic():
        quota_consume(user, 1)
        _log(user, team, DetectionLog.Kind.DETECT, keys, 1, text=text)
    try:
        groups = prepare_keys(keys)
    except ScoringError as exc:
        raise ProblemError(str(exc), status_code=503) from None
    return score_text(text, groups, threshold=settings.PROVENANCE_THRESHOLD)


# --- audits -----------------------------------------------------------------------------


def _audit_items(items: Any) -> list[tuple[str, str]]:
    if not isinstance(items, list) or not items:
        raise ProblemError("texts must be a non-empty list")
    limit = settings.PROVENANCE_MAX_AUDIT_TEXTS
    if len(items) > limit:
        raise PayloadTooLarge(f"an audit holds at most {limit} texts; got {len(items)}")
    cleaned = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "text" not in item:
            raise ProblemError(f"texts[{i}] must be an object with a 'text' field")
        client_id = item.get("client_id", "")
        if not isinstance(client_id, str) or len(client_id) > 200:
            raise ProblemError(f"texts[{i}].client_id must be a string of at most 200 chars")
        cleaned.append((client_id, text_validate(item["text"], f"texts[{i}].text")))
    return cleaned


def _request_hash(items: list[tuple[str, str]], key_ids: Sequence[Any] | None) -> str:
    canonical = json.dumps({"texts": items, "key_ids": key_ids}, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def audit_submit(
    *,
    user: AbstractBaseUser,
    texts: Any,
    key_ids: Sequence[Any] | None = None,
    idempotency_key: str = "",
) -> tuple[Audit, bool]:
    """Store an audit and queue it; returns (audit, created). A replayed Idempotency-Key
    with the same body returns the first audit; with another body it is a conflict."""
    team = _team_required(user)
    if len(idempotency_key) > 200:
        raise ProblemError("Idempotency-Key is longer than 200 characters")
    items = _audit_items(texts)
    keys = keys_for_check(team, key_ids)
    digest = _request_hash(items, None if key_ids is None else [str(k) for k in key_ids])
    if idempotency_key:
        existing = _audit_replay(team, idempotency_key, digest)
        if existing is not None:
            return existing, False
    try:
        return _audit_store(user, team, items, keys, idempotency_key, digest), True
    except IntegrityError:
        # A concurrent request with the same Idempotency-Key won the race.
        existing = _audit_replay(team, idempotency_key, digest)
        if existing is None:
            raise
        return existing, False


def _audit_replay(team: Team, idempotency_key: str, digest: str) -> Audit | None:
    existing = Audit.objects.filter(team=team, idempotency_key=idempotency_key).first()
    if existing is not None and existing.request_hash != digest:
        raise Conflict("this Idempotency-Key was already used with a different request")
    return existing


@transaction.atomic
def _audit_store(
    user: AbstractBaseUser,
    team: Team,
    items: list[tuple[str, str]],
    keys: list[WatermarkKey],
    idempotency_key: str,
    digest: str,
) -> Audit:
    quota_consume(user, len(items))
    key_ids = [str(key.id) for key in keys]
    audit = Audit.objects.create(
        team=team,
        submitted_by=user,
        idempotency_key=idempotency_key,
        request_hash=digest,
        num_texts=len(items),
        key_ids=key_ids,
        threshold=settings.PROVENANCE_THRESHOLD,
    )
    now = timezone.now()
    check_ids = [uuid.uuid4() for _ in items]
    bulk.insert_rows(
        Check,
        [
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
        ],
        (
            (
                check_id,
                team.id,
                user.pk,
                audit.id,
                i,
                client_id,
                text,
                text_sha256(text),
                key_ids,
                audit.threshold,
                Status.PENDING,
                "",
                now,
            )
            for i, (check_id, (client_id, text)) in enumerate(zip(check_ids, items, strict=True))
        ),
    )
    _log(user, team, DetectionLog.Kind.AUDIT, keys, len(items), audit=audit)
    transaction.on_commit(lambda: audit_enqueue(audit.id, check_ids))
    return audit


def audit_enqueue(audit_id: Any, check_ids: Sequence[Any]) -> int:
    """Queue an audit's checks in chunks; returns how many checks reached the broker."""
    from provenance.checks.tasks import audit_score_chunk_task

    size, queued = settings.PROVENANCE_AUDIT_CHUNK, 0
    for start in range(0, len(check_ids), size):
        chunk = [str(cid) for cid in check_ids[start : start + size]]
        if not _enqueue(audit_score_chunk_task, str(audit_id), chunk):
            break  # the broker is down: the sweeper takes the rest
        Check.objects.filter(id__in=chunk).update(queued_at=timezone.now())
        queued += len(chunk)
    return queued


def audit_fail(audit_id: Any, reason: str, check_ids: Sequence[Any]) -> None:
    """Fail the open checks among ``check_ids`` (one chunk: other chunks may be scoring)."""
    open_checks = Check.objects.filter(
        audit_id=audit_id, id__in=check_ids, status__in=[Status.PENDING, Status.RUNNING]
    )
    open_checks.update(status=Status.FAILED, failure_reason=reason, finished_at=timezone.now())
    audit_refresh(audit_id)


def audit_score_chunk(audit_id: Any, check_ids: list[Any], claim: str = "") -> None:
    """Score a slice of an audit (the task body, ``claim`` its message id): keys decrypted
    once, rows written in bulk. Only the checks this task could claim are scored."""
    audit = Audit.objects.filter(id=audit_id).only("id", "key_ids").first()
    if audit is None:
        return
    claim = claim or uuid.uuid4().hex
    checks = checks_claim(check_ids, claim, ("id", "text", "threshold"), audit_id=audit.id)
    if not checks:
        audit_refresh(audit_id)
        return
    try:
        groups = prepare_keys(_ordered_keys(audit.key_ids))
    except ScoringError as exc:
        for check in checks:
            check_fail(check.id, str(exc))
        audit_refresh(audit_id)
        return
    _score_many(checks, groups, claim)
    audit_refresh(audit_id)


def _score_many(checks: list[Check], groups: list[KeyGroup], claim: str) -> None:
    try:
        results = score_texts(
            [check.text for check in checks], groups, threshold=_threshold(checks)
        )
        pairs = list(zip(checks, results, strict=True))
    except (ScoringError, ValueError):
        pairs = _score_one_by_one(checks, groups)  # isolates the text that cannot be scored
    _store_once(pairs, claim)


def _threshold(checks: list[Check]) -> float:
    thresholds = {check.threshold for check in checks}
    if len(thresholds) != 1:  # one audit has one threshold; refuse a silent mix
        raise ScoringError("the checks of one chunk carry different thresholds")
    return thresholds.pop()


def _score_one_by_one(checks: list[Check], groups: list[KeyGroup]) -> list[tuple[Check, Any]]:
    pairs = []
    for check in checks:
        try:
            result = score_text(check.text, groups, threshold=check.threshold, with_tokens=False)
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
        Audit.objects.filter(id=audit_id).exclude(status=Status.DONE).update(
            status=Status.DONE, finished_at=timezone.now()
        )


def tokenizers_warm() -> int:
    """Load every registered tokenizer into this process's cache; returns how many."""
    from provenance.checks.scoring import tokenizer_load
    from provenance.keys.models import Tokenizer

    count = 0
    for tokenizer in Tokenizer.objects.all():
        try:
            tokenizer_load(tokenizer)
            count += 1
        except ScoringError as exc:
            logger.warning("%s", exc)
    logger.info("warmed %d tokenizer(s)", count)
    return count


# --- oracle limits and the audit log ------------------------------------------------------


def quota_used_today(user: AbstractBaseUser) -> int:
    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    used = DetectionLog.objects.filter(user=user, created_at__gte=start).aggregate(
        n=Sum("num_texts")
    )
    return int(used["n"] or 0)


def quota_consume(user: AbstractBaseUser, num_texts: int) -> None:
    """The detector is an oracle for forging and scrubbing: cap texts per user per UTC day.
    Counted from the audit log, so every process and restart agrees. Call it inside the
    transaction that writes the log entry: the user's row is locked first (PostgreSQL; on
    SQLite the transaction holds the write lock from its start), so two concurrent requests
    cannot both pass on the same remaining quota."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("quota_consume must run in the transaction that logs the use")
    limit = settings.PROVENANCE_DAILY_QUOTA
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").first()
    used = quota_used_today(user)
    if used + num_texts > limit:
        raise ProblemError(
            f"daily quota exceeded: {used} of {limit} texts checked today; "
            f"this request needs {num_texts}",
            status_code=429,
        )


def _log(
    user: AbstractBaseUser,
    team: Team,
    kind: str,
    keys: Sequence[WatermarkKey],
    num_texts: int,
    *,
    check: Check | None = None,
    audit: Audit | None = None,
    text: str | None = None,
) -> None:
    """Who checked what against which keys (ids and names only; never a key value)."""
    DetectionLog.objects.create(
        user=user,
        username=user.get_username(),
        team=team,
        kind=kind,
        check_run=check,
        audit=audit,
        num_texts=num_texts,
        text_sha256=text_sha256(text) if text else "",
        key_ids=[str(key.id) for key in keys],
        key_names=[key.name for key in keys],
    )


# --- the sweeper: the database is the source of truth, the broker only a delivery ------


def checks_sweep(
    *, pending_after: float, running_after: float | None = None, dead_after: float | None = None
) -> dict[str, int]:
    """Queue again what is lost, and only that:

    - running checks of dead workers (a new worker took the node name, or the heartbeat is
      older than ``dead_after`` seconds): released to pending and queued at once;
    - pending checks the broker never got (queued_at empty, created a few seconds ago);
    - queued pending checks while nothing waits in the broker's queue and no worker holds
      them, ``pending_after`` seconds after their queuing (Redis restarted empty, or a
      worker died with the message in hand before it claimed the check). A check waiting
      behind a long backlog is never taken for lost: the queue is not empty then.

    ``running_after`` is accepted for the command line's sake; running checks older than
    PROVENANCE_SWEEP_RUNNING_AFTER (a holder with no heartbeat) are free to claim anyway.
    Idempotent tasks make a spurious re-queue cost a lookup, never a second result."""
    reaped = workers_reap(dead_after or settings.PROVENANCE_WORKER_DEAD_AFTER)
    released = checks_release_dead()
    now = timezone.now()
    lost = Q(status=Status.PENDING, queued_at__isnull=True)
    lost &= Q(created_at__lt=now - _seconds(min(pending_after, 5.0))) | Q(id__in=released)
    backlog = queue_backlog()
    if backlog == 0:
        lost |= Q(status=Status.PENDING, queued_at__lt=now - _seconds(pending_after))
    stale = running_after or settings.PROVENANCE_SWEEP_RUNNING_AFTER
    lost |= Q(status=Status.RUNNING, worker__isnull=True, started_at__lt=now - _seconds(stale))
    rows = list(
        Check.objects.filter(lost).order_by("audit_id", "position").values_list("id", "audit_id")
    )
    queued = _requeue(rows)
    if rows or reaped:
        logger.info(
            "sweeper: %d worker(s) found dead, %d lost check(s), %d queued again (backlog %s)",
            reaped,
            len(rows),
            queued,
            backlog,
        )
    return {"dead_workers": reaped, "stuck": len(rows), "queued": queued}


def _requeue(rows: list[tuple[Any, Any]]) -> int:
    singles = [cid for cid, audit_id in rows if audit_id is None]
    by_audit: dict[Any, list[Any]] = {}
    for cid, audit_id in rows:
        if audit_id is not None:
            by_audit.setdefault(audit_id, []).append(cid)
    queued = check_enqueue(singles) if singles else 0
    for audit_id, ids in by_audit.items():
        queued += audit_enqueue(audit_id, ids)
    return queued


def queue_backlog() -> int | None:
    """Messages waiting in the scoring queue (not those a worker holds); None when the broker
    cannot be asked (it is down: nothing can be queued again anyway)."""
    from provenance.celery import app

    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0.2, timeout=2)
            queue = app.amqp.queues[app.conf.task_default_queue](conn.default_channel)
            return int(queue.queue_declare().message_count)
    except Exception as exc:  # kombu/redis raise many types for "broker unreachable"
        logger.warning("cannot read the queue's length (%s)", type(exc).__name__)
        return None


def _seconds(value: float) -> Any:
    from datetime import timedelta

    return timedelta(seconds=value)
