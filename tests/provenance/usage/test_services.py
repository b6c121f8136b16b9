"""Detector use (provenance.usage.services): the daily quota holds when requests race."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from provenance.checks.models import Check
from provenance.checks.services import check_create
from provenance.errors import ProblemError
from provenance.usage.models import DetectionLog


def _pending(cast, text: str) -> Check:
    return check_create(user=cast["alice"], text=text)


@pytest.mark.django_db(transaction=True)
def test_the_daily_quota_holds_when_requests_race(
    quiet_redis, cast, alice_key, human_text, settings
):
    settings.PROVENANCE_DAILY_QUOTA = 5
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def submit(i: int) -> None:
        start.wait()
        try:
            check_create(user=cast["alice"], text=f"{human_text} {i}")
            outcomes.append("stored")
        except ProblemError as exc:
            outcomes.append(str(exc.status_code))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["429"] * 3 + ["stored"] * 5
    assert Check.objects.count() == 5
    assert sum(DetectionLog.objects.values_list("num_texts", flat=True)) == 5


@pytest.mark.django_db(transaction=True)
def test_the_quota_is_taken_only_inside_the_transaction_that_logs_the_request(cast):
    from provenance.usage.services import quota_consume

    with pytest.raises(RuntimeError, match="transaction"):
        quota_consume(cast["alice"], 1)


@pytest.mark.django_db
def test_a_request_past_the_quota_is_refused_and_takes_nothing(cast, settings):
    from provenance.usage.selectors import quota_used_today
    from provenance.usage.services import quota_consume

    settings.PROVENANCE_DAILY_QUOTA = 3
    quota_consume(cast["alice"], 2)
    with pytest.raises(ProblemError) as refused:
        quota_consume(cast["alice"], 2)
    assert refused.value.status_code == 429 and "2 of 3" in str(refused.value)
    assert quota_used_today(cast["alice"]) == 2 and quota_used_today(cast["bob"]) == 0
    quota_consume(cast["alice"], 1)  # exactly the limit
    assert quota_used_today(cast["alice"]) == 3
