"""Register a public-verification partner and print its key once (the last word of the
output); only the key's SHA-256 is stored. The partner sends it as ``Authorization: Bearer``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from provenance.errors import ProblemError
from provenance.public import services


class Command(BaseCommand):
    help = "Register a public-verification partner; prints its key (the last word)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the partner's name, e.g. a regulator or newsroom")
        parser.add_argument(
            "--per-minute",
            type=int,
            default=None,
            help="checks a minute (default PROVENANCE_PUBLIC_PARTNER_PER_MIN)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        per_minute = options["per_minute"]
        if per_minute is not None and per_minute < 1:
            raise CommandError("--per-minute is at least 1")
        try:
            partner, key = services.partner_create(name=options["name"], per_minute=per_minute)
        except ProblemError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"partner {partner.name!r} registered; its key (shown once): {key}")
