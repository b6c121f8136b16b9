"""Publishing scoring work: a message per task on a reachable broker, False (and a log line)
when it is down, the queue's length read back."""

from __future__ import annotations

import logging

from provenance.checks import queue
from tests.provenance.conftest import point_celery_at


def test_published_tasks_wait_in_the_queue(quiet_redis):
    # quiet_redis: no worker consumes there, so the session's Celery worker cannot take them.
    start = queue.backlog()
    assert start is not None
    assert queue.publish(queue.SCORE_CHECK, "00000000-0000-0000-0000-000000000001") is True
    assert queue.publish(queue.SCORE_CHECK, "00000000-0000-0000-0000-000000000002") is True
    assert queue.backlog() == start + 2


def test_with_the_broker_down_publish_says_so_and_backlog_is_unknown(caplog):
    from provenance.celery import app

    before = app.conf.broker_url
    point_celery_at("redis://127.0.0.1:9/0")  # nothing listens on port 9
    try:
        with caplog.at_level(logging.WARNING, logger="provenance.celery"):
            assert queue.publish(queue.SCORE_CHECK, "x") is False
            assert queue.backlog() is None
    finally:
        point_celery_at(before)
    assert "the sweeper will retry" in caplog.text
