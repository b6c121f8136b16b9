"""The Celery application: configured from Django settings (CELERY_* names)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")

app = Celery("provenance")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(
    [
        "provenance.checks",
        "provenance.audits",
        "provenance.heartbeats",
        "provenance.keys",
        "provenance.webhooks",
    ]
)
