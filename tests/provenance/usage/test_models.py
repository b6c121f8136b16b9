"""The detection log's entries and the quota's counters (the usage app's models, on the tables
the checks app created)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError
from django.utils import timezone

from provenance.checks.services import check_create
from provenance.usage.models import DetectionLog, QuotaUsage


def test_an_entry_outlives_its_check_and_its_user(cast, alice_key, human_text):
    check = check_create(user=cast["alice"], text=human_text)
    entry = DetectionLog.objects.get(check_run_id=check.id)
    assert str(entry) == "alice check (1 text(s))"
    check.delete()
    cast["alice"].delete()
    entry.refresh_from_db()
    assert (entry.check_run_id, entry.user_id, entry.username) == (None, None, "alice")


def test_one_counter_per_user_and_day(cast):
    today = timezone.now().date()
    QuotaUsage.objects.create(user=cast["alice"], day=today, used=3)
    with pytest.raises(IntegrityError):
        QuotaUsage.objects.create(user=cast["alice"], day=today, used=1)
