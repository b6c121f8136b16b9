from __future__ import annotations

from django.contrib import admin

from provenance.playground.models import Conversation, Message


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    can_delete = False
    readonly_fields = fields = (
        "role",
        "status",
        "content",
        "key_name",
        "watermarked",
        "model",
        "log10_p",
    )

    def has_add_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "team", "user", "created_at"]
    list_filter = ["team"]
    search_fields = ["title", "user__username"]
    list_select_related = ["team", "user"]
    raw_id_fields = ["user"]
    inlines = [MessageInline]
