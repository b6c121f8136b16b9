"""Rotate the key-encryption key: re-encrypt every value stored under the KEK (watermark
keys, signing keys, webhook secrets: every ``encrypted_*`` field) under the first KEK.

Production: set PROVENANCE_KEK="<new>,<old>" (web and workers), run this, then drop <old>.
Embedded default (KEK file in the data directory): ``--generate`` writes a new KEK in front
of the old one, re-encrypts, then keeps only the new one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from provenance.keys import services
from provenance.lib import crypto


class Command(BaseCommand):
    help = "Re-encrypt every value stored under the key-encryption key under the first one."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--generate",
            action="store_true",
            help="embedded default only: generate a new KEK into the data directory first",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["generate"]:
            if settings.PROVENANCE_KEK:
                raise CommandError("PROVENANCE_KEK is set: put the new KEK first there instead")
            crypto.kek_file_prepend_new()
        try:
            with transaction.atomic():  # every encrypted field: all or nothing
                count = services.encrypted_reencrypt()
        except crypto.KeyDecryptionError as exc:
            raise CommandError(f"{exc}; nothing was changed") from None
        if options["generate"]:
            crypto.kek_file_keep_first()
        self.stdout.write(f"re-encrypted {count} value(s) under the first KEK")
