"""Rotate the key-encryption key: re-encrypt every stored key under the first KEK.

Production: set PROVENANCE_KEK="<new>,<old>" (web and workers), run this, then drop <old>.
Embedded default (KEK file in the data directory): ``--generate`` writes a new KEK in front
of the old one, re-encrypts, then keeps only the new one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from provenance.keys import crypto, services
from provenance.reports.services import signing_keys_reencrypt


class Command(BaseCommand):
    help = "Re-encrypt every stored watermark key under the first key-encryption key."

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
            with transaction.atomic():  # watermark and signing keys: all or nothing
                count = services.keys_reencrypt() + signing_keys_reencrypt()
        except crypto.KeyDecryptionError as exc:
            raise CommandError(f"{exc}; nothing was changed") from None
        if options["generate"]:
            crypto.kek_file_keep_first()
        self.stdout.write(f"re-encrypted {count} key(s) under the first KEK")
