"""The Celery application: JSON only, acknowledged late, one task at a time per worker
process, no result backend, and the product's tasks registered by name."""

from __future__ import annotations

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
