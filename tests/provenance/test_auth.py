"""Signed-in checks and the API's token authentication (one query, refusals on a bad token
or an inactive user)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from provenance.auth import TokenAuthentication, signed_in


def test_signed_in_returns_an_account_and_refuses_an_anonymous_one(cast):
    assert signed_in(cast["alice"]) is cast["alice"]
    with pytest.raises(PermissionDenied):
        signed_in(AnonymousUser())


def test_a_token_reads_its_user_and_team_in_one_query(cast, django_assert_num_queries):
    token = Token.objects.create(user=cast["alice"])
    with django_assert_num_queries(1):
        user, got = TokenAuthentication().authenticate_credentials(token.key)
        assert user.membership.team.name == "acme"  # no second query
    assert got == token


def test_an_unknown_token_or_inactive_user_is_refused(cast):
    with pytest.raises(AuthenticationFailed):
        TokenAuthentication().authenticate_credentials("0" * 40)
    token = Token.objects.create(user=cast["bob"])
    cast["bob"].is_active = False
    cast["bob"].save()
    with pytest.raises(AuthenticationFailed, match="inactive"):
        TokenAuthentication().authenticate_credentials(token.key)


def test_the_api_answers_a_token_and_refuses_a_wrong_one(api_for, client):
    assert api_for("alice").get("/api/v1/checks").status_code == 200
    wrong = client.get("/api/v1/checks", HTTP_AUTHORIZATION="Token " + "f" * 40)
    assert wrong.status_code == 401 and wrong.json()["code"] == "authentication_failed"
