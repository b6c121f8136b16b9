"""``manage.py playground_keyfile PATH``: write the generator's key file from the registry.

For deployments where the generator runs apart from ``make run``: run it after keys change,
then restart (or start) ``python -m generator serve --keys PATH``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from provenance.playground.keyfile import keyfile_write


class Command(BaseCommand):
    help = "Write every active key to the generator's key file (mode 0600)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")

    def handle(self, *args: Any, **options: Any) -> None:
        count = keyfile_write(options["path"])
        self.stdout.write(f"wrote {count} key(s) to {options['path']}")
