"""The calibration task, run eagerly: it measures a pending run once, and a failure or a
time limit fails the run with a reason instead of leaving it running."""

from __future__ import annotations

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from provenance.keys import calibration
from provenance.keys.models import KeyCalibration
from provenance.keys.tasks import key_calibrate_task

pytestmark = pytest.mark.django_db


def _pending(key) -> KeyCalibration:
    return calibration.calibration_request(
        key=key, texts_per_genre=4, power_prompts=0, publish_task=False
    )


def test_the_task_measures_a_pending_calibration_once(alice_key, monkeypatch):
    run = _pending(alice_key)
    key_calibrate_task.apply(args=[str(run.id)]).get()
    run.refresh_from_db()
    assert run.status == "done" and run.rates.count() == 3
    finished = run.finished_at
    key_calibrate_task.apply(args=[str(run.id)]).get()  # delivered again: left alone
    run.refresh_from_db()
    assert run.finished_at == finished


def test_a_time_limit_fails_the_run_with_its_reason(alice_key, monkeypatch):
    def too_slow(calibration_id):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(calibration, "calibration_run", too_slow)
    run = _pending(alice_key)
    key_calibrate_task.apply(args=[str(run.id)])
    run.refresh_from_db()
    assert run.status == "failed" and run.failure_reason == "calibration exceeded its time limit"


def test_an_error_fails_the_run_naming_only_its_kind(alice_key, monkeypatch):
    def broken(calibration_id):
        raise RuntimeError("details that stay in the log")

    monkeypatch.setattr(calibration, "calibration_run", broken)
    run = _pending(alice_key)
    result = key_calibrate_task.apply(args=[str(run.id)])
    assert result.failed()
    run.refresh_from_db()
    assert run.status == "failed" and run.failure_reason == "calibration failed (RuntimeError)"
