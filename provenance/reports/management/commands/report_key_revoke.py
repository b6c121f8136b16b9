"""Revoke a report-signing key (its private half leaked): it leaves /.well-known/jwks.json
and is listed there as revoked, so every report it signed stops verifying and ``python -m
detector verify`` names the revocation. Revoking the active key starts a new one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from provenance.errors import ProblemError
from provenance.reports import services


class Command(BaseCommand):
    help = "Revoke a report-signing key by its kid: reports it signed no longer verify."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "kid",
            help="the key's id as the JWKS names it; one that begins with '-' (a base64url "
            "thumbprint can) follows '--': report_key_revoke -- -Xy...",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            key = services.signing_key_revoke(options["kid"])
        except ProblemError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"revoked report-signing key {key.kid}; it left the JWKS")
