"""The sweeper's part in a Celery worker's start: once the worker is ready (registered and
beating, ``provenance.heartbeats.tasks``), queue again at once what the worker it replaced
held. Connected when the worker imports the apps' tasks."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready
from django.conf import settings
from django.db import DatabaseError

from provenance.sweeper.services import checks_sweep

logger = logging.getLogger(__name__)


@worker_ready.connect
def _recover_at_start(**_: Any) -> None:
    """Queue again at once what a replaced worker held (its checks are released as dead)."""
    try:
        checks_sweep(pending_after=settings.PROVENANCE_SWEEP_PENDING_AFTER)
    except DatabaseError:  # the sweeper's next pass does it
        logger.exception("recovery sweep at start failed")
