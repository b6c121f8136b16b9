"""``manage.py checks_purge``: texts past the retention period go, the verdict stays, and
the command says how many rows it purged."""

from __future__ import annotations

import io
from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone

from provenance.checks.models import Check
from provenance.checks.services import check_create


def _purge() -> str:
    out = io.StringIO()
    call_command("checks_purge", stdout=out)
    return out.getvalue().strip()


def test_the_command_purges_old_texts_and_counts_them(cast, alice_key, settings):
    settings.PROVENANCE_RETENTION_DAYS = 30
    old = check_create(user=cast["alice"], text="an old essay")
    fresh = check_create(user=cast["alice"], text="a fresh essay")
    Check.objects.filter(id=old.id).update(created_at=timezone.now() - timedelta(days=31))
    assert _purge() == "purged 1"
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert old.text == "" and old.purged_at is not None and old.text_sha256
    assert fresh.text == "a fresh essay" and fresh.purged_at is None
    assert _purge() == "purged 0"  # nothing is purged twice
