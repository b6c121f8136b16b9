from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "provenance.accounts"
    label = "accounts"
    verbose_name = "Teams"
