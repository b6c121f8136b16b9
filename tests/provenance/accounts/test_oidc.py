"""Organization sign-in end to end: a real OpenID Connect provider (django-oidc-provider in
its own Django process on loopback) and the app's live server, talked to over HTTP as a
browser would (authorization code flow with PKCE, signed ID token, userinfo)."""

from __future__ import annotations

import re

import httpx
import pytest
from django.contrib.auth import get_user_model

from provenance.accounts.models import ExternalIdentity, Membership
from tests.provenance.oidc_provider.flow import leave_group, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_an_organization_user_signs_in_into_the_team_their_group_maps_to(
    oidc_settings, live_server, cast
):
    client, landed = sign_in(live_server.url, "alice")
    assert landed.url.path == "/" and 'id="id_text"' in landed.text  # signed in, paste form
    identity = ExternalIdentity.objects.select_related("user").get()
    user = identity.user
    # The provider's alice is not the local alice: accounts are matched by subject only.
    assert user != cast["alice"] and user.username.startswith("alice-")
    assert not user.has_usable_password()
    membership = Membership.objects.get(user=user)
    assert membership.team == cast["acme"] and membership.is_admin
    assert user.has_perm("playground.use_playground")
    assert client.get(f"{live_server.url}/playground/").status_code == 200
    # Signing in again finds the same account (no second user).
    sign_in(live_server.url, "alice")
    assert get_user_model().objects.filter(username__startswith="alice-").count() == 1


def test_a_user_in_no_mapped_group_is_refused(oidc_settings, live_server, cast):
    users_before = get_user_model().objects.count()
    client, landed = sign_in(live_server.url, "mallory")
    assert landed.url.path == "/accounts/login/" and 'id="oidc-refused"' in landed.text
    assert get_user_model().objects.count() == users_before
    assert not ExternalIdentity.objects.exists()
    page = client.get(f"{live_server.url}/checks/")
    assert page.url.path == "/accounts/login/"  # not signed in


def test_local_accounts_sign_in_beside_the_organization(oidc_settings, live_server, cast):
    client = httpx.Client(follow_redirects=True, timeout=30)
    page = client.get(f"{live_server.url}/accounts/login/")
    assert "Sign in with Example School" in page.text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    landed = client.post(
        f"{live_server.url}/accounts/login/",
        data={"username": "alice", "password": "alice-pass-123", "csrfmiddlewaretoken": token},
        headers={"Referer": f"{live_server.url}/accounts/login/"},
    )
    assert landed.url.path == "/" and 'id="id_text"' in landed.text


def test_organization_sign_in_is_absent_unless_configured(client, db):
    assert "oidc-login" not in client.get("/accounts/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404


def test_every_sign_in_applies_the_groups_of_that_moment(
    oidc_settings, live_server, cast, tmp_path
):
    sign_in(live_server.url, "alice")
    user = ExternalIdentity.objects.get().user
    assert user.has_perm("playground.use_playground")
    provider_db = tmp_path / "provider.sqlite3"
    leave_group(provider_db, "alice", "playground-users")
    leave_group(provider_db, "alice", "essays-admins")
    client, _ = sign_in(live_server.url, "alice")
    user = get_user_model().objects.get(pk=user.pk)  # fresh permission cache
    assert not user.has_perm("playground.use_playground")
    assert not Membership.objects.get(user=user).is_admin
    assert client.get(f"{live_server.url}/playground/").status_code == 403
    leave_group(provider_db, "alice", "essays")  # now in no mapped group: refused
    client, landed = sign_in(live_server.url, "alice")
    assert landed.url.path == "/accounts/login/" and 'id="oidc-refused"' in landed.text
    assert client.get(f"{live_server.url}/checks/").url.path == "/accounts/login/"
