"""Signed-in checks and the API's token authentication (one query, refusals on a bad,
expired or revoked token or an inactive user; only a digest stored)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.utils import timezone, translation
from knox.crypto import hash_token
from knox.models import AuthToken
from rest_framework.exceptions import AuthenticationFailed

from provenance.accounts.auth import TokenAuthentication, signed_in


def test_signed_in_returns_an_account_and_refuses_an_anonymous_one(cast):
    assert signed_in(cast["alice"]) is cast["alice"]
    with pytest.raises(PermissionDenied):
        signed_in(AnonymousUser())


def test_a_token_reads_its_user_and_team_in_one_query(cast, django_assert_num_queries):
    row, token = AuthToken.objects.create(user=cast["alice"])
    TokenAuthentication().authenticate_credentials(token.encode())  # built once per process
    with django_assert_num_queries(1):
        user, got = TokenAuthentication().authenticate_credentials(token.encode())
        assert user.membership.team.name == "acme"  # no second query
    assert got == row


def test_an_unknown_token_or_inactive_user_is_refused(cast):
    with pytest.raises(AuthenticationFailed):
        TokenAuthentication().authenticate_credentials(b"0" * 64)
    with pytest.raises(AuthenticationFailed):
        TokenAuthentication().authenticate_credentials(b"\xff\xfe")
    _, token = AuthToken.objects.create(user=cast["bob"])
    User.objects.filter(pk=cast["bob"].pk).update(is_active=False)  # no signal: the read refuses
    # In English whatever language an earlier test's request left active in this thread.
    with translation.override("en"), pytest.raises(AuthenticationFailed, match="inactive"):
        TokenAuthentication().authenticate_credentials(token.encode())


def test_only_the_digest_and_a_prefix_are_stored(cast):
    row, token = AuthToken.objects.create(user=cast["alice"])
    stored = AuthToken.objects.filter(pk=row.pk).values().get()
    assert token not in {str(value) for value in stored.values()}
    assert stored["digest"] == hash_token(token) and token.startswith(stored["token_key"])
    assert len(token) == 64 and len(stored["token_key"]) == 15


def test_an_expired_token_is_refused_and_deleted(cast):
    row, token = AuthToken.objects.create(user=cast["alice"], expiry=timedelta(seconds=-1))
    with pytest.raises(AuthenticationFailed):
        TokenAuthentication().authenticate_credentials(token.encode())
    assert not AuthToken.objects.filter(pk=row.pk).exists()


def test_a_new_token_expires_after_the_configured_days(cast, settings):
    row, _ = AuthToken.objects.create(user=cast["alice"])
    assert settings.PROVENANCE_API_TOKEN_DAYS == 90
    days = (row.expiry - timezone.now()) / timedelta(days=1)
    assert 89.9 < days <= 90


def test_the_api_answers_a_token_and_refuses_a_wrong_one(api_for, client):
    assert api_for("alice").get("/api/v1/checks").status_code == 200
    wrong = client.get("/api/v1/checks", HTTP_AUTHORIZATION="Token " + "f" * 64)
    assert wrong.status_code == 401 and wrong.json()["code"] == "authentication_failed"
