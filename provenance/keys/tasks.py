"""Celery tasks of the registry: thin adapters that take ids and call the services.

Keys are decrypted where they are used: the scoring tasks (provenance.checks.tasks) and the
calibration below. Messages carry only ids (UUID strings, JSON)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from provenance.keys import calibration


class CalibrationTask(Task):
    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # No retries: a run is claimed once (pending -> running), so a database hiccup or a
        # bug fails it with a reason rather than leaving it "running"; request it again.
        calibration.calibration_fail(args[0], f"calibration failed ({type(exc).__name__})")


@shared_task(
    name=calibration.CALIBRATE,
    base=CalibrationTask,
    soft_time_limit=settings.PROVENANCE_CALIBRATION_SOFT_TIME_LIMIT,
    time_limit=settings.PROVENANCE_CALIBRATION_TIME_LIMIT,
)
def key_calibrate_task(calibration_id: str) -> None:
    try:
        calibration.calibration_run(calibration_id)
    except SoftTimeLimitExceeded:
        calibration.calibration_fail(calibration_id, "calibration exceeded its time limit")
