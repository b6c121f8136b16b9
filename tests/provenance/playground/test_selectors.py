"""Reads of the playground: the user's own team's active keys, private conversations, replies
only, and the bounded history the generator is shown."""

from __future__ import annotations

import pytest
from django.http import Http404

from provenance.accounts.services import user_create
from provenance.keys.services import key_create, key_retire
from provenance.playground import selectors
from provenance.playground.models import Conversation, Message

pytestmark = pytest.mark.django_db


def test_keys_are_the_own_teams_active_ones_never_shared_ones(cast, alice_key, tokenizer_row):
    key_create(name="shared", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    old, _ = key_create(name="old", team=cast["acme"], tokenizer=tokenizer_row)
    key_retire(key=old)
    assert list(selectors.playground_keys(cast["bob"])) == [alice_key]
    assert not selectors.playground_keys(user_create(username="loner", password="p")).exists()


def test_a_conversation_is_found_only_for_its_user(cast):
    mine = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    assert selectors.conversation_get(cast["bob"], mine.pk) == mine
    assert list(selectors.conversations_for_user(cast["alice"])) == []
    with pytest.raises(Http404):
        selectors.conversation_get(cast["alice"], mine.pk)  # same team, not hers


def test_message_get_finds_assistant_replies_of_the_users_conversations(cast):
    mine = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    turn = Message.objects.create(conversation=mine, role="user", content="hi")
    reply = Message.objects.create(conversation=mine, role="assistant", content="hello")
    assert selectors.message_get(cast["bob"], reply.pk) == reply
    for user, message in ((cast["bob"], turn), (cast["alice"], reply)):
        with pytest.raises(Http404):
            selectors.message_get(user, message.pk)


def test_the_history_keeps_finished_turns_in_order_and_at_most_its_bound(cast):
    chat = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    for i in range(selectors.HISTORY_MESSAGES + 3):
        role = "user" if i % 2 == 0 else "assistant"
        Message.objects.create(conversation=chat, role=role, content=f"turn {i}")
    Message.objects.create(conversation=chat, role="assistant", content="lost", status="failed")
    Message.objects.create(conversation=chat, role="assistant", content="", status="stopped")
    got = selectors.history(chat)
    assert len(got) == selectors.HISTORY_MESSAGES
    assert got[-1] == {"role": "user", "content": f"turn {selectors.HISTORY_MESSAGES + 2}"}
    assert got[0]["content"] == "turn 3" and all(m["content"] != "lost" for m in got)
    assert [m.content for m in selectors.conversation_messages(chat)][:2] == ["turn 0", "turn 1"]
