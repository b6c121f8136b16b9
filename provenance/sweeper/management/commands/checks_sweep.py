"""Reap dead workers and queue again the checks that are lost (held by a dead worker; gone
with Redis; never queued), purge the texts past their retention period (``checks_purge``),
and ask the identity provider about organization users due for it (``identities_confirm``).

One pass by default; ``--every N`` loops (docker compose runs it so; ``make run`` calls the
same service from its supervision loop).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError, close_old_connections

from provenance.accounts.identities import identities_confirm
from provenance.retention.services import checks_purge
from provenance.sweeper.services import checks_sweep


class Command(BaseCommand):
    help = (
        "Reap dead workers, queue again lost checks, purge texts past their retention, confirm"
        " organization users at the identity provider."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--every", type=float, default=0, help="loop: seconds between passes")
        parser.add_argument("--pending-after", type=float, default=None)
        parser.add_argument("--running-after", type=float, default=None)
        parser.add_argument(
            "--alive-file",
            default="",
            help="touched after every pass (a container healthcheck reads its age)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        pending = options["pending_after"] or settings.PROVENANCE_SWEEP_PENDING_AFTER
        running = options["running_after"] or settings.PROVENANCE_SWEEP_RUNNING_AFTER
        while True:
            close_old_connections()
            try:
                found = checks_sweep(pending_after=pending, running_after=running)
                found["purged"] = checks_purge()
                found["deprovisioned"] = identities_confirm().deprovisioned
            except DatabaseError as exc:
                if not options["every"]:
                    raise
                self.stderr.write(f"sweep failed ({type(exc).__name__}); retrying")
            else:
                self.stdout.write(
                    f"dead workers {found['dead_workers']}, stuck {found['stuck']}, "
                    f"queued {found['queued']}, purged {found['purged']},"
                    f" deprovisioned {found['deprovisioned']}"
                )
                self.stdout.flush()
                if options["alive_file"]:
                    Path(options["alive_file"]).touch()
            if not options["every"]:
                return
            time.sleep(options["every"])
