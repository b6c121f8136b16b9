from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from knox.models import AuthToken

from provenance.accounts.models import Membership, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "oracle_tier", "retention_days", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "joined_at"]
    list_filter = ["team"]
    search_fields = ["user__username", "team__name"]
    autocomplete_fields = ["user", "team"]


# API tokens: the list shows each token's prefix, never its digest (the token itself is not
# stored); tokens are made on the user's own token page, shown there once, and an
# administrator may only revoke (delete) one.
admin.site.unregister(AuthToken)


@admin.register(AuthToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["token_key", "user", "created", "expiry"]
    list_filter = ["expiry"]
    search_fields = ["token_key", "user__username"]
    fields = readonly_fields = ("token_key", "user", "created", "expiry")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
