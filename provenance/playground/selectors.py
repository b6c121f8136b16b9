"""Reads for the playground; every query is scoped to the caller (conversations are private)."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import Http404

from provenance.accounts.selectors import team_for_user
from provenance.keys.models import WatermarkKey
from provenance.playground.models import Conversation, Message

# The generator sees this many earlier messages at most: a small model has a small context.
HISTORY_MESSAGES = 12


def playground_keys(user: User) -> QuerySet[WatermarkKey]:
    """Keys the user may generate with: the active keys of their own team (not shared ones:
    marking text with another team's key would forge that team's provenance)."""
    team = team_for_user(user)
    if team is None:
        return WatermarkKey.objects.none()
    return WatermarkKey.objects.filter(team=team, status=WatermarkKey.Status.ACTIVE).select_related(
        "tokenizer"
    )


def conversations_for_user(user: User) -> QuerySet[Conversation]:
    return Conversation.objects.filter(user=user)


def conversation_get(user: User, conversation_id: uuid.UUID) -> Conversation:
    conversation = conversations_for_user(user).filter(pk=conversation_id).first()
    if conversation is None:
        raise Http404("no such conversation")
    return conversation


def message_get(user: User, message_id: uuid.UUID) -> Message:
    """An assistant reply in one of the user's conversations."""
    message = (
        Message.objects.filter(pk=message_id, conversation__user=user, role=Message.Role.ASSISTANT)
        .select_related("conversation", "key")
        .first()
    )
    if message is None:
        raise Http404("no such reply")
    return message


def conversation_messages(conversation: Conversation) -> QuerySet[Message]:
    return conversation.messages.order_by("created_at").select_related("key")


def history(conversation: Conversation) -> list[dict[str, str]]:
    """What the generator is shown: user turns and the replies that came through."""
    kept = [Message.Status.DONE, Message.Status.STOPPED]
    rows = conversation.messages.filter(status__in=kept).exclude(content="").order_by("-created_at")
    recent = list(rows.values_list("role", "content")[:HISTORY_MESSAGES])
    return [{"role": role, "content": content} for role, content in reversed(recent)]
