from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from provenance.checks.models import Audit, Check, DetectionLog, Hypothesis


class HypothesisInline(admin.TabularInline):
    model = Hypothesis
    extra = 0
    can_delete = False
    readonly_fields = fields = (
        "index",
        "key",
        "key_name",
        "tokenizer_name",
        "algorithm",
        "score",
        "num_tokens",
        "num_scored_tokens",
        "p_value",
        "log10_p",
        "adjusted_log10_p",
    )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Check)
class CheckAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "team",
        "submitted_by",
        "audit",
        "status",
        "is_watermarked",
        "log10_p",
        "num_hypotheses",
        "created_at",
    ]
    list_filter = ["status", "is_watermarked", "team"]
    search_fields = ["client_id", "submitted_by__username", "team__name"]
    list_select_related = ["team", "submitted_by", "audit"]
    raw_id_fields = ["audit", "best_key", "submitted_by"]
    readonly_fields = [
        "status",
        "failure_reason",
        "num_hypotheses",
        "is_watermarked",
        "p_value",
        "log10_p",
        "num_tokens",
        "num_scored_tokens",
        "best_key",
        "created_at",
        "started_at",
        "finished_at",
        "scoring_ms",
        "key_ids",
        "threshold",
    ]
    exclude = ["token_data", "heatmap_compact"]
    inlines = [HypothesisInline]


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
