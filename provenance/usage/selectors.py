"""Reads of detector use."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.utils import timezone

from provenance.usage.models import QuotaUsage


def quota_used_today(user: User) -> int:
    """Texts the user submitted to the detector since midnight UTC (the quota's counter)."""
    day = timezone.now().date()
    used = QuotaUsage.objects.filter(user=user, day=day).values_list("used", flat=True)
    return int(next(iter(used), 0))
