"""An organization user the provider cannot be asked about between sign-ins (no refresh
token) keeps no API access through a session cookie past the session's renewal time: pages
renew the session with the provider (and sign out a user it no longer knows), ``/api/`` is
exempt from that renewal, so it accepts such a session only while it is fresh. A sign-in
that brings no refresh token keeps the one stored before (it used to clear it, which took
the user out of the sweeper's confirmations)."""

from __future__ import annotations

import time

import pytest

from provenance.accounts.identities import identities_due
from provenance.accounts.models import ExternalIdentity
from provenance.accounts.services import identity_signed_in
from provenance.lib.crypto import decrypt_bytes

pytestmark = pytest.mark.django_db

OIDC_BACKEND = "provenance.accounts.oidc.OrganizationBackend"


@pytest.fixture
def organization_user(cast, settings):
    settings.AUTHENTICATION_BACKENDS = [OIDC_BACKEND, "django.contrib.auth.backends.ModelBackend"]
    settings.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_SECRET = "client"
    for name in ("AUTHORIZATION", "TOKEN", "USER", "JWKS"):
        setattr(settings, f"OIDC_OP_{name}_ENDPOINT", f"https://idp.example/{name.lower()}")
    ExternalIdentity.objects.create(user=cast["alice"], subject="sub-alice")
    return cast["alice"]


def _signed_in(client, user, renew_at: float):
    client.force_login(user, backend=OIDC_BACKEND)
    session = client.session
    session["oidc_id_token_expiration"] = renew_at
    session.save()


def test_a_stale_session_of_a_user_without_refresh_token_has_no_api(client, organization_user):
    _signed_in(client, organization_user, renew_at=time.time() + 600)
    assert client.get("/api/v1/checks").status_code == 200  # fresh: confirmed at sign-in
    # Past the renewal time (the provider may have removed the user since) ...
    _signed_in(client, organization_user, renew_at=time.time() - 1)
    refused = client.get("/api/v1/checks")
    assert refused.status_code in (401, 403)
    assert "renewed" in refused.json()["detail"]
    # ... while a page still answers, and renews the session with the provider (a redirect
    # to it, prompt=none, when organization sign-in is on).
    assert client.get("/checks/").status_code in (200, 302)


def test_a_user_with_a_refresh_token_is_confirmed_by_the_sweeper_instead(client, organization_user):
    identity_signed_in(subject="sub-alice", refresh_token="refresh-1")
    _signed_in(client, organization_user, renew_at=time.time() - 1)
    assert client.get("/api/v1/checks").status_code == 200
    assert list(identities_due()) == []  # just confirmed; due again after the interval


def test_a_local_user_session_is_untouched(client, cast):
    client.force_login(cast["bob"])
    assert client.get("/api/v1/checks").status_code == 200


def test_a_sign_in_without_a_refresh_token_keeps_the_stored_one(organization_user):
    identity_signed_in(subject="sub-alice", refresh_token="refresh-1")
    identity_signed_in(subject="sub-alice", refresh_token=None)
    identity = ExternalIdentity.objects.get(subject="sub-alice")
    assert decrypt_bytes(identity.encrypted_refresh_token) == b"refresh-1"
    identity_signed_in(subject="sub-alice", refresh_token="refresh-2")  # a new one replaces it
    identity.refresh_from_db()
    assert decrypt_bytes(identity.encrypted_refresh_token) == b"refresh-2"
