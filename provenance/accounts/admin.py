from __future__ import annotations

from django.contrib import admin

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
