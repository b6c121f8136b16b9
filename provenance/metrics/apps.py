from __future__ import annotations

from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "provenance.metrics"
    label = "metrics"
    verbose_name = "Operator metrics"
