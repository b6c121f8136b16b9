from __future__ import annotations

from django.apps import AppConfig


class StreamsConfig(AppConfig):
    name = "provenance.streams"
    label = "streams"
    verbose_name = "Streaming detection"
