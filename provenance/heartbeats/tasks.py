"""A Celery worker's life as its signals tell it: registered before the pool forks, beating
once ready, marked stopped at shutdown (what a replaced worker held is queued again by the
sweeper's own handler, ``provenance.sweeper.tasks``). Connected when the worker imports the
apps' tasks."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_init, worker_ready, worker_shutdown
from django.db import DatabaseError

from provenance.heartbeats import services as workers

logger = logging.getLogger(__name__)

_heartbeat: workers.Heartbeat | None = None


@worker_init.connect
def _register_worker(sender: Any, **_: Any) -> None:
    """Before the pool forks: the worker row exists and every pool process knows its id. A
    live-looking worker of the same node name is the one this process replaces: dead."""
    replaced = workers.worker_start(sender.hostname)[1]
    logger.info("worker %s registered (replaces %d)", sender.hostname, replaced)


@worker_ready.connect
def _start_heartbeat(**_: Any) -> None:
    """Beat from now on."""
    global _heartbeat
    worker = workers.current_worker()
    if worker is None:
        return
    _heartbeat = workers.Heartbeat(worker)
    _heartbeat.start()


@worker_shutdown.connect
def _stop_heartbeat(**_: Any) -> None:
    worker = workers.current_worker()
    if _heartbeat is not None:
        _heartbeat.stop()
    if worker is not None:
        try:
            workers.worker_stop(worker)
        except DatabaseError:  # its heartbeat stops: it is found dead a little later
            logger.warning("could not mark worker %s stopped", worker.nodename)
