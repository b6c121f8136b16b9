from __future__ import annotations

from django.apps import AppConfig


class KeysConfig(AppConfig):
    name = "provenance.keys"
    label = "keys"
    verbose_name = "Watermark key registry"
