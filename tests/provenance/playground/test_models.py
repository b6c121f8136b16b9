"""Conversations and messages: names in words, the playground permission, turn order."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from provenance.playground.models import Conversation, Message

pytestmark = pytest.mark.django_db


def test_a_conversation_is_named_by_its_title_or_its_id(cast):
    chat = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    assert str(chat) == f"conversation {chat.pk}"
    chat.title = "About cats"
    assert str(chat) == "About cats"


def test_the_playground_permission_exists_and_is_not_granted_by_default(cast):
    assert Permission.objects.filter(codename="use_playground").exists()
    assert not cast["bob"].has_perm("playground.use_playground")


def test_messages_come_in_turn_order_and_go_with_their_conversation(cast, alice_key):
    chat = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    first = Message.objects.create(conversation=chat, role="user", content="a")
    second = Message.objects.create(conversation=chat, role="assistant", content="b", key=alice_key)
    assert list(chat.messages.all()) == [first, second] and str(first) == f"user message {first.pk}"
    assert first.status == "done" and first.token_ids == []
    chat.delete()
    assert not Message.objects.exists()
