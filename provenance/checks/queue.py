"""Publishing scoring work to the broker, by task name.

Services publish through here and never import the tasks module (tasks import services,
so the reverse would be a circle). The names are the contract with ``tasks.py``, which
registers its tasks under them.
"""

from __future__ import annotations

import logging
from typing import Any

from provenance.celery import app, publish
from provenance.checks.models import Check

logger = logging.getLogger(__name__)

SCORE_CHECK = "provenance.checks.score_check"
SCORE_AUDIT_CHUNK = "provenance.checks.score_audit_chunk"
# The reading of a check answered with its model-free verdict and reading "pending".
READ_CHECK = "provenance.checks.read_check"
# Reading an audit's uploaded files (a check's document is read by its scoring task).
EXTRACT_AUDIT = "provenance.audits.extract_audit"


def check_publish(check: Check) -> None:
    """After a new check's commit: publish its scoring; a failed publish clears its
    queued_at, in the database and on the object the caller answers with, so the sweeper
    takes it."""
    if not publish(SCORE_CHECK, str(check.id)):
        Check.objects.filter(id=check.id).update(queued_at=None)
        check.queued_at = None


def reading_publish(check: Check) -> None:
    """After a check stored with reading "pending" commits: publish its reading. A failed
    publish leaves it pending for the sweeper (``provenance.sweeper``) to publish again."""
    if not publish(READ_CHECK, str(check.id)):
        logger.warning("the reading of a check could not be queued; the sweeper will")


def backlog() -> int | None:
    """Messages waiting in the scoring queue (not those a worker holds); None when the broker
    cannot be asked (it is down: nothing can be published again anyway)."""
    try:
        with app.connection_for_read() as conn:
            # kombu-stubs type interval_start as int and queue_declare() as the queue's name;
            # kombu takes seconds as a float and returns (name, message_count, consumers).
            conn.ensure_connection(max_retries=1, interval_start=0.2, timeout=2)  # type: ignore[arg-type]
            declared = app.amqp.queues[app.conf.task_default_queue](conn.default_channel)
            declare_ok: Any = declared.queue_declare()
            return int(declare_ok.message_count)
    except Exception as exc:  # kombu/redis raise many types for "broker unreachable"
        logger.warning("cannot read the queue's length (%s)", type(exc).__name__)
        return None
