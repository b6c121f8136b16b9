"""Which worker holds which check. A task claims its checks (status "running", this worker
(``provenance.heartbeats``), this message) with one conditional UPDATE, so two deliveries of
one check never both score it, and the checks of a dead worker can be queued again at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from provenance.checks.models import Check, Status
from provenance.heartbeats.services import current_worker
from provenance.lib import precompiled


def checks_claim(
    check_ids: Sequence[Any], claim: str, fields: Sequence[str] = ("id",), **scope: Any
) -> list[Check]:
    """Mark as running, held by this worker under ``claim`` (the task message's id), those of
    ``check_ids`` (narrowed by ``scope`` filters) that are free to take: pending ones, running
    ones under this same claim (the message was delivered again after its worker process
    died) and running ones older than PROVENANCE_SWEEP_RUNNING_AFTER (above every task's
    hard time limit: their holder is gone). Returns the checks now held under ``claim``
    (only ``fields`` loaded), ordered by id.

    One UPDATE whose conditions read only the row itself: on PostgreSQL a second claimer
    waits for the row lock and re-evaluates them on the committed row, so exactly one wins;
    on SQLite writers are serialized outright.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PROVENANCE_SWEEP_RUNNING_AFTER)
    free = (
        Q(status=Status.PENDING)
        | Q(status=Status.RUNNING, claim=claim)
        | Q(status=Status.RUNNING, started_at__lt=stale)
    )
    worker = current_worker()
    values = {"status": Status.RUNNING, "worker": worker, "claim": claim, "started_at": now}
    # The UPDATE, too, is compiled once per thread and shape: every task runs it.
    ids = [precompiled.prepared(Check, "id", check_id) for check_id in check_ids]
    scoped = [precompiled.prepared(Check, name, value) for name, value in sorted(scope.items())]
    at, before = (precompiled.prepared(Check, "started_at", t) for t in (now, stale))
    shape = ("checks_claim_update", len(ids), tuple(sorted(scope)), worker is None)
    params = (
        Status.RUNNING,
        *([] if worker is None else [precompiled.prepared(Check, "worker", worker)]),
        claim,
        at,
        *ids,
        *scoped,
        # Q sorts its keyword conditions by name: claim before status, started_at too.
        Status.PENDING,
        claim,
        Status.RUNNING,
        before,
        Status.RUNNING,
    )

    def build() -> tuple[Any, dict[str, Any]]:
        return Check.objects.filter(Q(id__in=check_ids) & Q(**scope) & free), values

    # Where the database returns what an UPDATE changed, the checks now held come back with
    # the UPDATE itself: the rows it changed are those held under ``claim`` (a row this claim
    # already held is among them: its conditions take it again).
    taken = precompiled.update_returning((*shape, tuple(fields)), build, params, fields)
    if taken is not None:
        return sorted(taken, key=lambda check: check.pk)
    precompiled.update(shape, build, params)
    # Read with a statement compiled once per thread and shape (provenance.lib.precompiled):
    # every task runs this read.
    return precompiled.objects(
        ("checks_claim", len(ids), tuple(fields)),
        lambda: held(check_ids, claim).order_by("id").only(*fields),
        held_params(check_ids, claim),
    )


def held(check_ids: Sequence[Any], claim: str) -> Any:
    """The checks of ``check_ids`` still held under ``claim`` (a queryset)."""
    return Check.objects.filter(id__in=check_ids, status=Status.RUNNING, claim=claim)


def held_params(check_ids: Sequence[Any], claim: str) -> tuple[Any, ...]:
    """The parameters of ``held``'s conditions as its compiled statement takes them
    (``provenance.lib.precompiled``): ``filter`` sorts keyword conditions by name, so claim,
    id, status."""
    ids = [precompiled.prepared(Check, "id", check_id) for check_id in check_ids]
    return (claim, *ids, Status.RUNNING)


def checks_release_dead() -> list[Any]:
    """Put back to "pending, never queued" the running checks of dead workers; returns their
    ids (the caller queues them). A stalled worker taken for dead that wakes up finds its
    claim gone and stores nothing."""
    dead = Check.objects.filter(status=Status.RUNNING, worker__dead_at__isnull=False)
    rows = list(dead.values_list("id", "worker_id"))
    if not rows:
        return []
    ids, workers = [cid for cid, _ in rows], {wid for _, wid in rows}
    # Conditions on the row itself (not a join), re-checked under PostgreSQL's row lock.
    Check.objects.filter(id__in=ids, status=Status.RUNNING, worker_id__in=workers).update(
        status=Status.PENDING, worker=None, claim="", queued_at=None, started_at=None
    )
    return ids
