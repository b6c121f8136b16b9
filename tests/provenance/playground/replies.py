"""Rows for the playground tests: the permission and a stored assistant reply."""

from __future__ import annotations

from django.contrib.auth.models import Permission

from provenance.playground.models import Message


def grant(*users) -> None:
    perm = Permission.objects.get(codename="use_playground")
    for user in users:
        user.user_permissions.add(perm)


def stored_reply(conversation, key, text: str) -> Message:
    return Message.objects.create(
        conversation=conversation,
        role="assistant",
        content=text,
        key=key,
        key_name=key.name,
        watermarked=True,
        model="m",
        temperature=1.0,
        top_p=1.0,
        max_tokens=20,
        token_ids=[1, 2, 3],
        status="done",
    )
