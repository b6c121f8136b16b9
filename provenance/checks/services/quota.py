"""The daily quota: the detector is an oracle for forging and scrubbing, so each user may
check a bounded number of texts per UTC day, counted in one row per user and day
(``QuotaUsage``; every process and restart agrees)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from provenance.checks import selectors
from provenance.checks.models import QuotaUsage
from provenance.errors import ProblemError


def quota_consume(user: User, num_texts: int) -> None:
    """Take ``num_texts`` from today's quota or refuse with 429.

    Runs inside the transaction that writes the request's detection-log row, so a request
    that fails later gives its texts back. One statement adds to the user's row for today
    only if the sum stays within the limit (``quota_take``): PostgreSQL holds the row's lock
    until the commit, so a concurrent request of the same user waits and then adds to the
    committed count; SQLite runs its transactions IMMEDIATE (settings), which serialises
    writers. Either way two requests cannot both take the last of the quota, and the cost
    does not grow with the day's volume (summing the detection log did).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("quota_consume must run in the transaction that logs the request")
    limit = settings.PROVENANCE_DAILY_QUOTA
    if num_texts > limit or not quota_take(user.pk, num_texts, limit):
        used = selectors.quota_used_today(user)
        raise ProblemError(
            f"daily quota exceeded: {used} of {limit} texts checked today; "
            f"this request needs {num_texts}",
            status_code=429,
        )


def quota_take(user_id: int, num_texts: int, limit: int) -> bool:
    """Add ``num_texts`` to the user's count for today, creating the row, unless that would
    pass ``limit``; whether it was added. One INSERT ... ON CONFLICT DO UPDATE ... WHERE
    (SQLite 3.35+ and PostgreSQL): the read and the write cannot be split."""
    quote = connection.ops.quote_name
    table = quote(QuotaUsage._meta.db_table)
    used = quote("used")
    sql = (
        f"INSERT INTO {table} ({quote('user_id')}, {quote('day')}, {used}) VALUES (%s, %s, %s) "
        f"ON CONFLICT ({quote('user_id')}, {quote('day')}) "
        f"DO UPDATE SET {used} = {table}.{used} + excluded.{used} "
        f"WHERE {table}.{used} + excluded.{used} <= %s RETURNING {used}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, timezone.now().date(), num_texts, limit])
        return cursor.fetchone() is not None
