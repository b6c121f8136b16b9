from __future__ import annotations

from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "provenance.playground"
    label = "playground"
    verbose_name = "Watermarked chat playground"
