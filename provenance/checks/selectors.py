"""Reads for checks; every query is scoped to the caller's team."""

from __future__ import annotations

import time
from typing import Any, Protocol

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import Http404

from provenance.accounts.models import Membership
from provenance.accounts.selectors import team_for_user
from provenance.checks import wake
from provenance.checks.bulk import prefetched
from provenance.checks.models import Check, Hypothesis, Reading, Status
from provenance.lib import precompiled


def checks_for_user(user: User) -> QuerySet[Check]:
    """Single checks of the user's team (audit items are listed under their audit)."""
    team = team_for_user(user)
    if team is None:
        return Check.objects.none()
    return Check.objects.filter(
        team=team, audit__isnull=True, deleted_at__isnull=True
    ).select_related("best_key")


def check_get(user: User, check_id: Any) -> Check:
    """The team's check ``check_id`` with its best key, submitter and hypotheses (404
    otherwise), in two statements compiled once per thread (``provenance.lib.precompiled``):
    every submission waited for and every poll reads it."""
    team = team_for_user(user)
    if team is None:
        raise Http404("no such check")
    check_pk = precompiled.prepared(Check, "id", check_id)
    found = precompiled.objects(
        ("check_get",),
        lambda: (
            Check.objects.filter(id=check_id, team=team, deleted_at__isnull=True)
            # 1.5 MB of JSON on a 45k-token text: loaded only where asked for (?tokens=1).
            .defer("token_data")
            .select_related("best_key", "submitted_by")[:1]
        ),  # the id is unique: no ORDER BY
        (check_pk, team.pk),
    )
    if not found:
        raise Http404("no such check")
    check = found[0]
    hypotheses = precompiled.objects(
        ("check_hypotheses",), lambda: Hypothesis.objects.filter(check_run=check.pk), (check_pk,)
    )
    for hypothesis in hypotheses:  # as prefetch_related gives them: their check set
        Hypothesis.check_run.field.set_cached_value(hypothesis, check)
    prefetched(check, "hypotheses", hypotheses)
    return check


def check_finished(
    check_id: Any, *, within: float, every: float = 0.01, final: bool = False
) -> bool:
    """Whether the check is done or failed, waiting up to ``within`` seconds for its worker
    (the API's ``?wait=``). With Redis the request sleeps until the worker's push
    (``provenance.checks.wake``, sent after the result is committed, and kept a minute, so a
    push that came first is found at once) and returns without a read: the caller reads the
    check then. After each slice without a push (a worker that died, a check failed
    elsewhere), one indexed read. Without Redis, one read after ``every`` seconds, then ever
    less often (x1.5 each time, at most every 0.25 s: a slow worker costs the web few reads).
    ``final``: done with its final decision, not waiting for a reading (reading "pending")."""
    deadline = time.monotonic() + within
    finished = Check.objects.filter(id=check_id, status__in=[Status.DONE, Status.FAILED])
    if final:
        finished = finished.exclude(reading=Reading.PENDING)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        woken = wake.wait(check_id, left)
        if woken and not final:
            return True
        if woken is None:
            time.sleep(min(every, left))
            every = min(every * 1.5, 0.25)
        if finished.exists():
            return True


class Submission(Protocol):
    """A submitted row: a check or an audit."""

    team_id: Any
    submitted_by_id: Any


def may_delete(user: User, row: Submission) -> bool:
    """The submitter or an admin of the row's team (who can see it: selectors checked): a
    check, or an audit (``provenance.audits`` asks too)."""
    if row.submitted_by_id == user.pk:
        return True
    return Membership.objects.filter(user=user, team_id=row.team_id, is_admin=True).exists()


# What the API and pages say while a check waits for the broker (it was down when the check was
# submitted; the sweeper publishes it once the broker is back).
CHECK_WAITING = (
    "the scoring queue is unavailable; the check waits as pending and is scored when the "
    "queue is back"
)


def queue_notice(check: Check) -> str:
    return CHECK_WAITING if check.status == Status.PENDING and check.queued_at is None else ""
