"""A single check's life: create (validate, take quota, store, publish or score inline),
score (the task body), fail; and the synchronous /detect route, which stores only its log
row."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeGuard

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from detector.text.wrapper import without_wrappers
from provenance.checks import bulk, queue, wake
from provenance.checks.bulk import prefetched
from provenance.checks.models import Check, Reading, Status, Surface
from provenance.checks.services.claims import checks_claim
from provenance.checks.services.extraction import check_text_read
from provenance.checks.services.results import (
    check_fail,
    hypotheses_prepare,
    keys_for_scoring,
    reading_store,
    result_values,
    results_store,
)
from provenance.checks.services.validation import team_required, text_validate
from provenance.errors import ProblemError
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import keys_for_check, prepare_keys
from provenance.scoring.service import ScoringError, TextResult, score_text
from provenance.usage.models import DetectionLog
from provenance.usage.services import (
    detection_log_create,
    detection_log_new,
    quota_consume,
    text_sha256,
)


def check_create(
    *,
    user: User,
    text: Any,
    key_ids: Sequence[Any] | None = None,
    filename: str = "",
    inline: bool = False,
    surface: str = Surface.PAGE,
) -> Check:
    """Store a check and queue its scoring; invalid input or an exhausted quota stores
    nothing. With the broker down the check is kept as pending (``queued_at`` stays empty)
    for the sweeper.

    ``inline``: a text of at most PROVENANCE_INLINE_MAX_BYTES is scored here, with the same
    scoring as the worker's model-free stage, before anything is stored, then stored done (or
    failed) with its results in the one transaction that takes the quota and logs the
    request: no claim is needed (no one else sees the row before it is done), and a process
    that dies meanwhile leaves nothing behind. A text that stage leaves undecided where a
    reading is possible is stored with reading "pending" and its reading published for a
    worker (``check_read``), which stores the final decision. ``surface``: the page or the API
    (metrics)."""
    team = team_required(user)
    text = text_validate(text)
    keys = keys_for_check(team, key_ids)
    scored, started = None, timezone.now()
    # A C2PA wrapper's characters are never scored: they count for nothing here either.
    small = len(without_wrappers(text)[0].encode("utf-8")) <= settings.PROVENANCE_INLINE_MAX_BYTES
    if inline and small:
        scored = _score_inline(text, keys)
    check = Check(
        team=team,
        submitted_by=user,
        text=text,
        filename=filename[:255],
        surface=surface,
        text_sha256=text_sha256(text),
        key_ids=[str(key.id) for key in keys],
        threshold=settings.PROVENANCE_THRESHOLD,
        # Set with the row, cleared if the publish fails: one write per check, not a
        # second transaction after the publish (SQLite serialises every write).
        queued_at=timezone.now() if scored is None else None,
        **({} if scored is None else _inline_values(scored, started)),
    )
    log = detection_log_new(
        user=user,
        team=team,
        kind=DetectionLog.Kind.CHECK,
        keys=keys,
        num_texts=1,
        check=check,
        text=text,
    )
    # Every statement is built and its values prepared before the transaction: on SQLite
    # the transaction holds the database's one write lock, which every other writer waits
    # for (bulk.Inserts).
    inserts = bulk.Inserts()
    inserts.new(check)
    inserts.new(log)
    hypotheses = hypotheses_prepare([(check, scored)], inserts) if _done(scored) else None
    with transaction.atomic():
        quota_consume(user, 1)
        inserts.run()
        if scored is None:
            transaction.on_commit(lambda: queue.check_publish(check))
        elif _done(scored) and scored.reading == "pending":
            transaction.on_commit(lambda: queue.reading_publish(check))
    if hypotheses is not None:  # the answer is built from what was written, not read back
        prefetched(check, "hypotheses", hypotheses)
    return check


def _inline_values(scored: TextResult | ScoringError, started: datetime) -> dict[str, Any]:
    """The columns of a check scored inline, stored with its row (one INSERT, no UPDATE):
    what the worker's ``results_store`` or ``check_fail`` would have written."""
    now = timezone.now()
    if isinstance(scored, ScoringError):
        failed = {"status": Status.FAILED, "failure_reason": str(scored), "finished_at": now}
        return {**failed, "started_at": started}
    return {**result_values(scored, now), "started_at": started}


def _done(scored: TextResult | ScoringError | None) -> TypeGuard[TextResult]:
    return isinstance(scored, TextResult)


def _score_inline(text: str, keys: list[WatermarkKey]) -> TextResult | ScoringError:
    """The model-free stage of what ``check_score`` computes for a check of ``text`` (the
    reading deferred to a worker: ``reading`` "pending" where it is due), or why it fails."""
    try:
        groups = prepare_keys(keys)
        return score_text(text, groups, threshold=settings.PROVENANCE_THRESHOLD, reading="defer")
    except ScoringError as exc:
        return exc


def check_enqueue(check_ids: Sequence[Any]) -> int:
    """Queue single checks; returns how many reached the broker (their queued_at is set)."""
    queued = [cid for cid in check_ids if queue.publish(queue.SCORE_CHECK, str(cid))]
    Check.objects.filter(id__in=queued).update(queued_at=timezone.now())
    return len(queued)


def check_score(check_id: Any, claim: str = "") -> None:
    """Score one check (the task body; ``claim`` is its message id), reading its uploaded
    document first when it has one (``extraction.check_text_read``). Done or failed checks,
    and checks another live task holds, are left as they are; a delivery that races another
    one stores nothing twice (``checks_claim``, ``results_store``)."""
    claim = claim or uuid.uuid4().hex
    mine = checks_claim([check_id], claim, ("id", "text", "key_ids", "threshold"))
    if not mine:
        return
    check = mine[0]
    if not check.text and not check_text_read(check, claim):  # an uploaded document: read here
        return
    try:
        groups = prepare_keys(keys_for_scoring(check.key_ids))
        result = score_text(check.text, groups, threshold=check.threshold, reading="read")
    except ScoringError as exc:
        check_fail(check_id, str(exc))
        wake.finished([check_id])
        return
    results_store([(check, result)], claim)
    wake.finished([check_id])  # the request waiting for it (?wait=) reads it now


def check_read(check_id: Any) -> None:
    """The reading of a check stored with its model-free verdict and reading "pending" (the
    task body): the same decision again, now reading the text where the model-free stage
    left it undecided (``score_text(..., reading="read")``), stored in place of the
    model-free one (``reading_store``), and the waiting requests woken. A check no longer
    pending (read by another delivery, deleted) is left as it is."""
    check = (
        Check.objects.filter(id=check_id, status=Status.DONE, reading=Reading.PENDING)
        .only("id", "text", "key_ids", "threshold")
        .first()
    )
    if check is None:
        return
    try:
        groups = prepare_keys(keys_for_scoring(check.key_ids))
        if not check.text:
            raise ScoringError("the text was removed before its reading")
        result = score_text(check.text, groups, threshold=check.threshold, reading="read")
    except ScoringError:
        reading_skip(check_id)
        return
    if result.reading != Reading.DONE:
        # not read here (this worker has no reading, or its budget is spent): the stored
        # model-free verdict stands, marked as such, rather than a decision made without the
        # reading's share set aside
        reading_skip(check_id)
        return
    reading_store(check, result)
    wake.finished([check_id])


def reading_skip(check_id: Any) -> None:
    """A pending reading that cannot be taken (its keys were deleted, its text purged, its
    task ran out of time): the model-free verdict stands, marked as such ("skipped")."""
    Check.objects.filter(id=check_id, reading=Reading.PENDING).update(reading=Reading.SKIPPED)
    wake.finished([check_id])


def detect_now(*, user: User, text: Any) -> TextResult:
    """Synchronous detection for the vLLM-compatible /detect route (only the log is stored)."""
    team = team_required(user)
    text = text_validate(text)
    keys = keys_for_check(team, None)
    with transaction.atomic():
        quota_consume(user, 1)
        detection_log_create(
            user=user, team=team, kind=DetectionLog.Kind.DETECT, keys=keys, num_texts=1, text=text
        )
    try:
        groups = prepare_keys(keys)
    except ScoringError as exc:
        raise ProblemError(str(exc), status_code=503) from None
    return score_text(text, groups, threshold=settings.PROVENANCE_THRESHOLD)
