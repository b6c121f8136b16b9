from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "provenance.accounts"
    label = "accounts"
    verbose_name = "Teams"

    def ready(self) -> None:
        from provenance.accounts import backends, signals  # noqa: F401  (connect the receivers)
