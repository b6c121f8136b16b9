from __future__ import annotations

from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "provenance.audits"
    label = "audits"
    verbose_name = "Audits"
