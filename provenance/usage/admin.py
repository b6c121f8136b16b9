from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from provenance.usage.models import DetectionLog


@admin.register(DetectionLog)
class DetectionLogAdmin(admin.ModelAdmin):
    """Read-only: an audit log that can be edited is not one."""

    list_display = ["created_at", "username", "team", "kind", "num_texts", "key_names"]
    list_filter = ["kind", "team", "created_at"]
    search_fields = ["username", "text_sha256", "key_names"]
    date_hierarchy = "created_at"
    list_select_related = ["team"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
