from __future__ import annotations

from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "provenance.usage"
    label = "usage"
    verbose_name = "Detector usage"
