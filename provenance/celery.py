"""The Celery application: configured from Django settings (CELERY_* names)."""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")

app = Celery("provenance")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(
    [
        "provenance.checks",
        "provenance.audits",
        "provenance.heartbeats",
        "provenance.sweeper",
        "provenance.keys",
        "provenance.webhooks",
    ]
)

logger = logging.getLogger(__name__)


@task_prerun.connect
@task_postrun.connect
def _connections_aged(sender: Any = None, **_: Any) -> None:
    """Around every task a worker runs, what Django does around every request: close this
    thread's database connections that are past DATABASE_CONN_MAX_AGE or broken by an error,
    keep the others (Celery's own fix-up would close them all, every task: the settings'
    CELERY_DB_REUSE_MAX turns that off). A task run in the caller's thread (``apply``) is
    left alone, as the fix-up leaves it: its caller may be inside a transaction."""
    if not getattr(getattr(sender, "request", None), "is_eager", False):
        close_old_connections()


def publish(task_name: str, *args: Any) -> bool:
    """Send one task message by name (the caller never imports the task's module); False
    when the broker is unreachable. The caller's rows stay pending and the sweeper
    (checks_sweep) publishes them again: the database is the source of truth, the broker
    only a delivery."""
    try:
        app.send_task(task_name, args=list(args))
    except Exception as exc:  # kombu/redis raise many types for "broker unreachable"
        logger.warning(
            "could not enqueue %s (%s); the sweeper will retry", task_name, type(exc).__name__
        )
        return False
    return True
