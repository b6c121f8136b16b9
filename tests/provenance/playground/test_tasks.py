"""The playground has no Celery task: a reply streams within its request."""

from __future__ import annotations

from celery import Task

from provenance.celery import app
from provenance.playground import tasks


def test_no_task_is_registered_for_the_playground():
    app.loader.import_default_modules()
    assert not [name for name in app.tasks if "playground" in name]
    assert not [v for v in vars(tasks).values() if isinstance(v, Task)]
