"""The playground admin: conversations with their messages read-only inline."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from provenance.playground.models import Conversation, Message
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_client(client):
    client.force_login(User.objects.create_superuser("root", "root@x.org", "root-pass-123"))
    return client


def test_the_list_and_the_page_show_the_conversation_and_its_messages(root_client, cast, alice_key):
    chat = Conversation.objects.create(team=cast["acme"], user=cast["bob"], title="About cats")
    Message.objects.create(
        conversation=chat,
        role="assistant",
        content="Cats purr.",
        key=alice_key,
        key_name="acme-main",
    )
    listing = root_client.get("/admin/playground/conversation/")
    assert listing.status_code == 200 and "About cats" in listing.content.decode()
    page = root_client.get(f"/admin/playground/conversation/{chat.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200 and "Cats purr." in html and "acme-main" in html
    assert str(KEY_VALUE) not in html and f"{KEY_VALUE:x}" not in html
    assert 'name="messages-0-content"' not in html  # read-only: no input for a message


def test_conversations_are_searched_by_user(root_client, cast):
    Conversation.objects.create(team=cast["acme"], user=cast["bob"], title="bob's")
    Conversation.objects.create(team=cast["other"], user=cast["charlie"], title="charlie's")
    found = root_client.get("/admin/playground/conversation/", {"q": "charlie"}).content.decode()
    assert "charlie&#x27;s" in found and "bob&#x27;s" not in found
