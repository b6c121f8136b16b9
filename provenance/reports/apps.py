from __future__ import annotations

from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "provenance.reports"
    label = "reports"
    verbose_name = "Signed reports"
