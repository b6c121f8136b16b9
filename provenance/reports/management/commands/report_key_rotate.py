"""Rotate the report-signing key: new reports are signed with a fresh Ed25519 key; the old
public keys stay in /.well-known/jwks.json, so reports signed before still verify."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from provenance.reports import services


class Command(BaseCommand):
    help = "Generate a new report-signing key; old public keys stay published."

    def handle(self, *args: Any, **options: Any) -> None:
        key = services.signing_key_rotate()
        self.stdout.write(f"new report-signing key {key.kid}; earlier keys stay in the JWKS")
