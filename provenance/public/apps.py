from __future__ import annotations

from django.apps import AppConfig


class PublicConfig(AppConfig):
    name = "provenance.public"
    label = "public"
    verbose_name = "Public verification"
