from __future__ import annotations

from django.contrib import admin

from provenance.audits.models import Audit


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    list_display = ["id", "team", "submitted_by", "status", "num_texts", "created_at"]
    list_filter = ["status", "team"]
    search_fields = ["idempotency_key", "submitted_by__username", "team__name"]
    readonly_fields = [
        "request_hash",
        "status",
        "num_texts",
        "key_ids",
        "threshold",
        "created_at",
        "finished_at",
    ]
