from __future__ import annotations

from django.contrib import admin

from provenance.reports.models import SigningKey


@admin.register(SigningKey)
class SigningKeyAdmin(admin.ModelAdmin):
    """Read-only: keys are made by ``report_key_rotate``; the private half is never shown."""

    list_display = ["kid", "created_at", "retired_at"]
    readonly_fields = fields = ("kid", "public_jwk", "created_at", "retired_at")

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False
