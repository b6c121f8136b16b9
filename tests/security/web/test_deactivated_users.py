"""A deactivated user loses every session and API token at once, whichever backend signed
them in; an organization session is re-checked with the provider, so a user removed there
is signed out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.provenance.conftest import REPO

pytestmark = pytest.mark.django_db

OIDC_BACKEND = "provenance.accounts.oidc.OrganizationBackend"


@pytest.fixture
def oidc_backend(settings):
    settings.AUTHENTICATION_BACKENDS = [OIDC_BACKEND, "django.contrib.auth.backends.ModelBackend"]
    settings.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_SECRET = "client"
    for name in ("AUTHORIZATION", "TOKEN", "USER", "JWKS"):
        setattr(settings, f"OIDC_OP_{name}_ENDPOINT", f"https://idp.example/{name.lower()}")


@pytest.mark.parametrize("backend", [OIDC_BACKEND, "django.contrib.auth.backends.ModelBackend"])
def test_a_deactivated_user_loses_the_session_at_once(client, cast, oidc_backend, backend):
    alice = cast["alice"]
    client.force_login(alice, backend=backend)
    assert client.get("/checks/").status_code == 200
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    response = client.get("/checks/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_deactivated_user_loses_the_api_token_at_once(api_for, cast):
    alice = api_for("alice")
    assert alice.get("/api/v1/checks").status_code == 200
    cast["alice"].is_active = False
    cast["alice"].save(update_fields=["is_active"])
    assert alice.get("/api/v1/checks").status_code == 401


def test_deactivation_deletes_the_tokens_and_sessions_so_reactivation_brings_none_back(
    api_for, cast, client
):
    from django.contrib.sessions.models import Session
    from knox.models import AuthToken

    alice, api = cast["alice"], api_for("alice")
    client.force_login(alice)
    assert api.get("/api/v1/checks").status_code == 200
    assert client.get("/checks/").status_code == 200
    alice.is_active = False
    alice.save()
    assert api.get("/api/v1/checks").status_code == 401
    assert not AuthToken.objects.filter(user=alice).exists()
    assert not Session.objects.exists()
    alice.is_active = True
    alice.save()
    assert api.get("/api/v1/checks").status_code == 401  # the old token stays revoked
    assert client.get("/checks/").status_code == 302  # the old session stays ended


def test_deactivating_in_the_admin_signs_the_user_out_everywhere(api_for, cast, client):
    from django.contrib.auth.models import User

    api = api_for("alice")
    root = User.objects.create_superuser("root", "root@x.org", "root-pass-123")
    client.force_login(root)
    page = f"/admin/auth/user/{cast['alice'].pk}/change/"
    form = {
        "username": "alice",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "is_active": "",
    }
    assert client.post(page, form).status_code == 302
    assert not User.objects.get(pk=cast["alice"].pk).is_active
    User.objects.filter(pk=cast["alice"].pk).update(is_active=True)
    assert api.get("/api/v1/checks").status_code == 401


def test_a_user_taken_out_of_every_mapped_group_loses_sessions_and_tokens(
    api_for, cast, client, oidc_backend, settings
):
    from provenance.accounts.models import ExternalIdentity
    from provenance.accounts.oidc import OrganizationBackend

    settings.PROVENANCE_OIDC = {**settings.PROVENANCE_OIDC, "TEAMS": {"essays": "acme"}}
    ExternalIdentity.objects.create(user=cast["alice"], subject="sub-alice")
    api = api_for("alice")
    client.force_login(cast["alice"], backend=OIDC_BACKEND)
    claims = {"sub": "sub-alice", "groups": ["alumni"]}  # the provider's answer on refresh
    assert OrganizationBackend().verify_claims(claims) is False
    assert api.get("/api/v1/checks").status_code == 401
    assert client.get("/checks/").status_code == 302
    assert api_for("bob").get("/api/v1/checks").status_code == 200  # no one else


def test_organization_sessions_are_re_checked_with_the_provider():
    env = {
        "PROVENANCE_OIDC_CLIENT_ID": "client",
        "PROVENANCE_OIDC_CLIENT_SECRET": "secret",
        "PROVENANCE_OIDC_AUTHORIZATION_ENDPOINT": "https://idp.example/authorize",
        "PROVENANCE_OIDC_TOKEN_ENDPOINT": "https://idp.example/token",
        "PROVENANCE_OIDC_USERINFO_ENDPOINT": "https://idp.example/userinfo",
        "PROVENANCE_OIDC_JWKS_ENDPOINT": "https://idp.example/jwks",
        "PROVENANCE_OIDC_TEAMS": "staff=acme",
    }
    code = "import json, provenance.settings as s; print(json.dumps(s.MIDDLEWARE))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "mozilla_django_oidc.middleware.SessionRefresh" in json.loads(result.stdout)
