"""Admin of public verification: partners (their usage log inline, revocation as an action;
keys are created by ``manage.py public_partner_create``) and the scrubbing loops stopped."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from provenance.public import services
from provenance.public.models import Partner, PartnerUsage, ScrubEvent


class PartnerUsageInline(admin.TabularInline):
    model = PartnerUsage
    extra = 0
    can_delete = False
    readonly_fields = ("at", "status_code", "verdict", "text_sha256")
    fields = readonly_fields
    ordering = ("-at", "-id")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Partner)
class PartnerAdmin(admin.ModelAdmin):
    list_display = ["name", "per_minute", "created_at", "revoked_at"]
    readonly_fields = ["name", "created_at", "revoked_at"]
    fields = ["name", "per_minute", "created_at", "revoked_at"]
    inlines = [PartnerUsageInline]
    actions = ["revoke_partners"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a partner's key is printed once by manage.py public_partner_create

    @admin.action(description=_("Revoke: the partner's key stops working"), permissions=["change"])
    def revoke_partners(self, request: HttpRequest, queryset: QuerySet[Partner]) -> None:
        for partner in queryset:
            services.partner_revoke(partner=partner)
        self.message_user(
            request, _("Revoked %(n)s partner(s).") % {"n": queryset.count()}, messages.SUCCESS
        )


@admin.register(PartnerUsage)
class PartnerUsageAdmin(admin.ModelAdmin):
    list_display = ["partner", "at", "status_code", "verdict", "text_sha256"]
    list_filter = ["partner", "status_code", "verdict"]
    readonly_fields = ["partner", "at", "status_code", "verdict", "text_sha256"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScrubEvent)
class ScrubEventAdmin(admin.ModelAdmin):
    list_display = ["family", "variants", "created_at"]
    readonly_fields = ["family", "variants", "text_hashes", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
