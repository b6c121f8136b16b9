"""The quota's counter: texts a user submitted today, nobody else's, not yesterday's."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from provenance.checks.services import check_create
from provenance.usage.models import QuotaUsage
from provenance.usage.selectors import quota_used_today


def test_each_submitted_text_counts_for_its_submitter_today(cast, alice_key):
    assert quota_used_today(cast["alice"]) == 0
    check_create(user=cast["alice"], text="first")
    check_create(user=cast["alice"], text="second")
    assert quota_used_today(cast["alice"]) == 2
    assert quota_used_today(cast["bob"]) == 0


def test_yesterdays_use_does_not_count(cast, alice_key):
    yesterday = timezone.now().date() - timedelta(days=1)
    QuotaUsage.objects.create(user=cast["alice"], day=yesterday, used=40)
    assert quota_used_today(cast["alice"]) == 0
    check_create(user=cast["alice"], text="today")
    assert quota_used_today(cast["alice"]) == 1
