"""``GET /api/v1/playground/replies/{id}``: a stored reply with its provenance, for its
author only."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from provenance.playground.models import Conversation
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.playground.replies import grant
from tests.provenance.playground.replies import stored_reply as _reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(cast):
    return Conversation.objects.create(team=cast["acme"], user=cast["bob"])


def test_the_api_returns_a_stored_reply_with_its_provenance(api_for, cast, conversation, alice_key):
    grant(cast["bob"], cast["alice"])
    reply = _reply(conversation, alice_key, "The reply text.")
    body = api_for("bob").get(reverse("api-playground-reply", args=[reply.pk])).json()
    assert body["key_name"] == "acme-main" and body["token_ids"] == [1, 2, 3]
    assert body["temperature"] == 1.0 and body["max_tokens"] == 20
    assert str(KEY_VALUE) not in json.dumps(body)
    # alice is on bob's team but the conversation is bob's.
    assert api_for("alice").get(reverse("api-playground-reply", args=[reply.pk])).status_code == 404


def test_the_permission_and_a_login_are_needed(api_for, cast, conversation, alice_key):
    reply = _reply(conversation, alice_key, "The reply text.")
    url = reverse("api-playground-reply", args=[reply.pk])
    assert api_for("bob").get(url).status_code == 403  # not granted the playground
    assert APIClient().get(url).status_code in (401, 403)


def test_a_users_own_turn_is_not_a_reply(api_for, cast, conversation):
    grant(cast["bob"])
    turn = conversation.messages.create(role="user", content="hello")
    assert api_for("bob").get(reverse("api-playground-reply", args=[turn.pk])).status_code == 404


def test_a_basic_tier_caller_gets_the_reply_redacted(api_for, cast, conversation, alice_key):
    grant(cast["bob"])
    reply = _reply(conversation, alice_key, "The reply text.")
    type(reply).objects.filter(pk=reply.pk).update(log10_p=-7.4)
    url = reverse("api-playground-reply", args=[reply.pk])
    assert api_for("bob").get(url).json()["log10_p"] == -7.4
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    body = api_for("bob").get(url).json()
    assert body["log10_p"] == -8  # rounded down to its power of ten
    assert body["content"] == "The reply text." and body["key_name"] == "acme-main"
