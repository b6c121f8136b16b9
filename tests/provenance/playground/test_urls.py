"""The playground's URLs resolve to their views; ids are UUIDs or nothing matches."""

from __future__ import annotations

import uuid

import pytest
from django.urls import Resolver404, resolve, reverse

from provenance.playground import api, views

ID = uuid.UUID(int=9)


@pytest.mark.parametrize(
    "name,args,path,view",
    [
        ("playground", [], "/playground/", views.conversation_list),
        ("playground-conversation", [ID], f"/playground/c/{ID}/", views.conversation_detail),
        ("playground-reply", [ID], f"/playground/c/{ID}/reply", views.reply_create),
        ("playground-check", [ID], f"/playground/m/{ID}/check", views.reply_check),
        ("playground-edit", [ID], f"/playground/m/{ID}/edit", views.reply_edit),
    ],
)
def test_each_name_reverses_to_its_path_and_resolves_to_its_view(name, args, path, view):
    assert reverse(name, args=args) == path and resolve(path).func == view


def test_the_reply_api_and_a_non_uuid_id():
    path = reverse("api-playground-reply", args=[ID])
    assert path == f"/api/v1/playground/replies/{ID}"
    assert resolve(path).func.view_class is api.ReplyDetailApi
    with pytest.raises(Resolver404):
        resolve("/playground/c/42/")
