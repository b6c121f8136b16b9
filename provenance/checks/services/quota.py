"""The daily quota: the detector is an oracle for forging and scrubbing, so each user may
check a bounded number of texts per UTC day, counted from the detection log (every process
and restart agrees)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection, transaction

from provenance.checks import selectors
from provenance.errors import ProblemError


def quota_consume(user: User, num_texts: int) -> None:
    """Take ``num_texts`` from today's quota or refuse with 429.

    Runs inside the transaction that writes the request's detection-log row (the unit it
    counts), so the read and the write cannot be split by a concurrent request of the same
    user: the user's row is locked first. PostgreSQL waits on that row lock and reads the
    log after the other transaction committed; SQLite runs its transactions IMMEDIATE
    (settings), which serialises writers already, and has no row locks: the lock's query is
    skipped there (one query less in every submission).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("quota_consume must run in the transaction that logs the request")
    if connection.features.has_select_for_update:
        user_model = get_user_model()
        list(user_model.objects.select_for_update().filter(pk=user.pk).values_list("pk"))
    limit = settings.PROVENANCE_DAILY_QUOTA
    used = selectors.quota_used_today(user)
    if used + num_texts > limit:
        raise ProblemError(
            f"daily quota exceeded: {used} of {limit} texts checked today; "
            f"this request needs {num_texts}",
            status_code=429,
        )
