"""The Celery application: JSON only, acknowledged late, one task at a time per worker
process, no result backend, and the product's tasks registered by name."""

from __future__ import annotations

import pytest
from celery import Celery

from provenance.celery import app


def test_the_app_takes_its_settings_from_django():
    from django.conf import settings

    conf = app.conf
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.task_acks_late is True and conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.result_backend is None
    # Tests point the app at their own Redis servers; a fresh app reads the same settings.
    fresh = Celery("provenance")
    fresh.config_from_object("django.conf:settings", namespace="CELERY")
    assert fresh.conf.broker_url == settings.CELERY_BROKER_URL
    assert fresh.conf.task_serializer == conf.task_serializer


def test_the_product_tasks_are_registered_under_the_names_services_publish():
    from provenance.checks import queue
    from provenance.keys.calibration import CALIBRATE
    from provenance.webhooks.services import DELIVER

    app.loader.import_default_modules()
    names = {queue.SCORE_CHECK, queue.SCORE_AUDIT_CHUNK, CALIBRATE, DELIVER}
    assert names <= set(app.tasks), names - set(app.tasks)
    assert app.tasks[queue.SCORE_CHECK].acks_late is True


def _task_runs(task) -> None:
    """What a worker does around one task of ``task`` for the database: Celery's Django
    fix-up's handlers, then the app's own (the signals a worker sends)."""
    from celery.fixups.django import DjangoWorkerFixup
    from celery.signals import task_postrun, task_prerun

    fixup = DjangoWorkerFixup(app)
    fixup.on_task_prerun(sender=task)
    task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    fixup.on_task_postrun(sender=task)
    task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={})


@pytest.fixture
def worker_task():
    """The scoring task as a worker runs it (not eagerly, in its caller's thread)."""
    from provenance.checks import tasks

    task = tasks.check_score_task
    task.push_request(is_eager=False)
    yield task
    task.pop_request()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("max_age", [60, 0])
def test_a_worker_keeps_its_database_connection_between_tasks_as_long_as_a_request_would(
    worker_task, monkeypatch, max_age
):
    from django.db import connection

    connection.close()
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", max_age)
    connection.ensure_connection()
    opened = connection.connection
    _task_runs(worker_task)
    _task_runs(worker_task)
    # Kept for the next task within DATABASE_CONN_MAX_AGE; closed past it (0: every task).
    assert (connection.connection is opened) == (max_age > 0)
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_worker_closes_a_connection_that_an_error_broke(worker_task, monkeypatch):
    from django.db import connection

    connection.close()
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    connection.ensure_connection()
    connection.errors_occurred = True
    monkeypatch.setattr(connection, "is_usable", lambda: False)
    _task_runs(worker_task)
    assert connection.connection is None
