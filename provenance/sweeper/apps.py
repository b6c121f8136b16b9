from __future__ import annotations

from django.apps import AppConfig


class SweeperConfig(AppConfig):
    name = "provenance.sweeper"
    label = "sweeper"
    verbose_name = "Sweeper"
