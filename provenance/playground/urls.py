from __future__ import annotations

from django.urls import path

from provenance.playground import api, views

# <str:...>: ids are opaque here (they may become UUIDs); selectors reject what is not one.
urlpatterns = [
    path("playground/", views.conversation_list, name="playground"),
    path(
        "playground/c/<str:conversation_id>/",
        views.conversation_detail,
        name="playground-conversation",
    ),
    path(
        "playground/c/<str:conversation_id>/reply",
        views.reply_create,
        name="playground-reply",
    ),
    path("playground/m/<str:message_id>/check", views.reply_check, name="playground-check"),
    path("playground/m/<str:message_id>/edit", views.reply_edit, name="playground-edit"),
    path(
        "api/v1/playground/replies/<str:message_id>",
        api.ReplyDetailApi.as_view(),
        name="api-playground-reply",
    ),
]
