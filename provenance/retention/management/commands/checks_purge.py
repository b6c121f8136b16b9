"""Remove the texts and per-token data of checks older than their team's retention period
(``PROVENANCE_RETENTION_DAYS``; a team may set fewer). The sweeper runs this on every pass."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from provenance.retention.services import checks_purge


class Command(BaseCommand):
    help = "Purge texts past their retention period (verdicts, p-values and hashes stay)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"purged {checks_purge()}")
