from __future__ import annotations

from django.apps import AppConfig


class RetentionConfig(AppConfig):
    name = "provenance.retention"
    label = "retention"
    verbose_name = "Retention"
