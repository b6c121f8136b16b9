from __future__ import annotations

from django.urls import path

from provenance.playground import api, views

# Ids are random UUIDs, as in checks: anything else does not match a route (404).
urlpatterns = [
    path("playground/", views.conversation_list, name="playground"),
    path(
        "playground/c/<uuid:conversation_id>/",
        views.conversation_detail,
        name="playground-conversation",
    ),
    path(
        "playground/c/<uuid:conversation_id>/reply",
        views.reply_create,
        name="playground-reply",
    ),
    path("playground/m/<uuid:message_id>/check", views.reply_check, name="playground-check"),
    path("playground/m/<uuid:message_id>/edit", views.reply_edit, name="playground-edit"),
    path(
        "api/v1/playground/replies/<uuid:message_id>",
        api.ReplyDetailApi.as_view(),
        name="api-playground-reply",
    ),
]
