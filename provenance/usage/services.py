"""Writes of detector use. The detector is an oracle for forging and scrubbing, so every use
is recorded (``detection_log_create``: text by hash, key ids and names, never values) and each
user may check a bounded number of texts per UTC day (``quota_consume``), counted in one row
per user and day (``QuotaUsage``; every process and restart agrees)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from provenance.accounts.models import Team
from provenance.errors import ProblemError
from provenance.keys.models import WatermarkKey
from provenance.usage import selectors
from provenance.usage.models import DetectionLog, QuotaUsage


def text_sha256(text: str) -> str:
    """The digest kept after the text itself is purged (the detection log holds it too)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def detection_log_create(
    *,
    user: User,
    team: Team,
    kind: str,
    keys: Sequence[WatermarkKey],
    num_texts: int,
    check: Model | None = None,
    audit: Model | None = None,
    stream: Model | None = None,
    text: str | None = None,
) -> DetectionLog:
    """Who checked what against which keys (ids and names only; never a key value). The
    daily quota counts these rows."""
    log = detection_log_new(
        user=user,
        team=team,
        kind=kind,
        keys=keys,
        num_texts=num_texts,
        check=check,
        audit=audit,
        stream=stream,
        text=text,
    )
    log.save(force_insert=True)
    return log


def detection_log_new(
    *,
    user: User,
    team: Team,
    kind: str,
    keys: Sequence[WatermarkKey],
    num_texts: int,
    check: Model | None = None,
    audit: Model | None = None,
    stream: Model | None = None,
    text: str | None = None,
) -> DetectionLog:
    """The row ``detection_log_create`` writes, not yet saved."""
    return DetectionLog(
        user=user,
        username=user.get_username(),
        team=team,
        kind=kind,
        # By id: the check, audit or stream is the row of an app above this one.
        check_run_id=None if check is None else check.pk,
        audit_id=None if audit is None else audit.pk,
        stream_id=None if stream is None else stream.pk,
        num_texts=num_texts,
        text_sha256=text_sha256(text) if text else "",
        key_ids=[str(key.id) for key in keys],
        key_names=[key.name for key in keys],
    )


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
