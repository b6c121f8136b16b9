from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from provenance.checks.fields import HYPOTHESIS_MODEL_FIELDS
from provenance.checks.models import Check, Hypothesis


class HypothesisInline(admin.TabularInline):
    model = Hypothesis
    extra = 0
    can_delete = False
    readonly_fields = fields = HYPOTHESIS_MODEL_FIELDS

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
