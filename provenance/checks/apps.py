from __future__ import annotations

from django.apps import AppConfig


class ChecksConfig(AppConfig):
    name = "provenance.checks"
    label = "checks"
    verbose_name = "Checks and audits"
