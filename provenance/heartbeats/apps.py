from __future__ import annotations

from django.apps import AppConfig


class HeartbeatsConfig(AppConfig):
    name = "provenance.heartbeats"
    label = "heartbeats"
    verbose_name = "Worker heartbeats"
