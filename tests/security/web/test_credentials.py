"""Credentials kept as a careful service keeps them: API tokens stored as digests, with an
expiry, revocable, shown once (django-rest-knox); password sign-ins throttled per username
and address (django-axes); existing plain tokens converted, not left in the database."""

from __future__ import annotations

import importlib
import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone
from knox.models import AuthToken

pytestmark = pytest.mark.django_db

TOKEN_PAGE = re.compile(r'<code id="api-token">([0-9a-f]{64})</code>')


def _token_from_page(client, user) -> str:
    client.force_login(user)
    return TOKEN_PAGE.search(client.post("/accounts/token/").content.decode()).group(1)


def test_a_database_dump_holds_no_usable_api_token(client, cast):
    token = _token_from_page(client, cast["alice"])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {AuthToken._meta.db_table}")
        dumped = " ".join(str(value) for row in cursor.fetchall() for value in row)
    assert token not in dumped
    for word in re.findall(r"[0-9a-f]{15,}", dumped):  # the digest and the prefix
        answer = client.get("/api/v1/checks", HTTP_AUTHORIZATION=f"Token {word}")
        assert answer.status_code == 401
    assert client.get("/api/v1/checks", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200


def test_the_admin_lists_token_prefixes_only(client, cast):
    from django.contrib.auth.models import User

    token = _token_from_page(client, cast["alice"])
    client.force_login(User.objects.create_superuser("root", "root@x.org", "root-pass-123"))
    listing = client.get("/admin/knox/authtoken/").content.decode()
    assert token[:15] in listing and token not in listing


def test_an_api_token_expires(client, cast, settings):
    token = _token_from_page(client, cast["alice"])
    row = AuthToken.objects.get(user=cast["alice"])
    lifetime = (row.expiry - row.created) / timedelta(days=settings.PROVENANCE_API_TOKEN_DAYS)
    assert settings.PROVENANCE_API_TOKEN_DAYS == 90 and 0.999 < lifetime <= 1
    AuthToken.objects.filter(pk=row.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/checks", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401


def test_a_leaked_token_is_revoked_over_the_api_and_on_the_page(client, cast):
    from rest_framework.test import APIClient

    token = _token_from_page(client, cast["alice"])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.post("/api/v1/token/revoke").status_code == 204
    assert api.get("/api/v1/checks").status_code == 401
    again = _token_from_page(client, cast["alice"])
    client.post("/accounts/token/", {"action": "revoke"})
    api.credentials(HTTP_AUTHORIZATION=f"Token {again}")
    assert api.get("/api/v1/checks").status_code == 401


def test_plain_tokens_of_an_earlier_version_are_hashed_and_keep_working(client, cast):
    plain = "0123456789abcdef0123456789abcdef01234567"  # DRF authtoken's 40 hex digits
    migration = importlib.import_module("provenance.accounts.migrations.0006_api_tokens_hashed")
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamp, "
            "user_id integer)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)",
            [plain, timezone.now(), cast["alice"].pk],
        )
    migration.hash_plain_tokens(apps, connection.schema_editor())
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone() == (0,)  # the plain rows are gone
    row = AuthToken.objects.get(user=cast["alice"])
    assert row.token_key == plain[:15] and row.expiry is not None
    assert client.get("/api/v1/checks", HTTP_AUTHORIZATION=f"Token {plain}").status_code == 200


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_password_guessing_is_locked_out_per_username_and_address(client, cast, settings, url):
    from django.contrib.auth.models import User

    User.objects.create_superuser("root", "root@x.org", "root-pass-123")
    limit = settings.AXES_FAILURE_LIMIT
    assert limit == 5
    for attempt in range(limit):
        answer = client.post(url, {"username": "root", "password": f"guess-{attempt}"})
        assert answer.status_code == (200 if attempt < limit - 1 else 429)
    from axes.models import AccessAttempt

    stored = " ".join(f"{a.post_data} {a.get_data}" for a in AccessAttempt.objects.all())
    assert "password=" in stored and "guess-" not in stored  # a near-miss password is not kept
    locked = client.post(url, {"username": "root", "password": "root-pass-123"})
    assert locked.status_code == 429 and 'id="locked-out"' in locked.content.decode()
    assert "_auth_user_id" not in client.session  # the right password does not get in
    other = client.post(url, {"username": "root", "password": "x"}, REMOTE_ADDR="192.0.2.9")
    assert other.status_code == 200  # another address is counted on its own
    bob = client.post(url, {"username": "bob", "password": "bob-pass-123"})
    assert bob.status_code != 429  # another username from the same address is not locked
