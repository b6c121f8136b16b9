"""Organization sign-in end to end: a real OpenID Connect provider (django-oidc-provider in
its own Django process on loopback) and the app's live server, talked to over HTTP as a
browser would (authorization code flow with PKCE, signed ID token, userinfo)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.contrib.auth import get_user_model

from provenance.accounts.models import ExternalIdentity, Membership
from provenance.runner.processes import stop_process
from provenance.runner.redis_server import free_port
from tests.provenance.oidc_provider.setup import PASSWORD
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
REPO = Path(__file__).resolve().parents[3]
CLIENT_ID, CLIENT_SECRET = "provenance-app", "provenance-app-secret"


def _up(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def provider(live_server, tmp_path):
    """The provider's base URL; the app's live server is its registered client."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.provenance.oidc_provider.settings",
        "OIDC_PROVIDER_DB": str(tmp_path / "provider.sqlite3"),
        "PYTHONPATH": str(REPO),
    }
    redirect = f"{live_server.url}/oidc/callback/"
    setup = [sys.executable, "-m", "tests.provenance.oidc_provider.setup", redirect]
    subprocess.run([*setup, CLIENT_ID, CLIENT_SECRET], cwd=REPO, env=env, check=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "django.core.wsgi:get_wsgi_application()"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "4"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _up(f"{base}/openid/.well-known/openid-configuration"), 60, 0.2)
        yield base
    finally:
        stop_process(server, timeout=10)


@pytest.fixture
def oidc_settings(settings, provider):
    """The app configured as the PROVENANCE_OIDC_* variables would configure it."""
    settings.PROVENANCE_OIDC = {
        "ENABLED": True,
        "LABEL": "Example School",
        "GROUP_CLAIM": "groups",
        "TEAMS": {"essays": "acme"},
        "ADMIN_GROUPS": ["essays-admins"],
        "PLAYGROUND_GROUPS": ["playground-users"],
    }
    settings.AUTHENTICATION_BACKENDS = [
        "provenance.accounts.oidc.OrganizationBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{provider}/openid/authorize"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{provider}/openid/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{provider}/openid/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{provider}/openid/jwks"
    return settings


def _sign_in(app: str, username: str) -> tuple[httpx.Client, httpx.Response]:
    """Click "Sign in with ...", log in at the provider, follow it back to the app."""
    client = httpx.Client(follow_redirects=True, timeout=30)
    login = client.get(f"{app}/accounts/login/")
    link = re.search(r'id="oidc-login" href="([^"]+)"', login.text).group(1)
    at_provider = client.get(f"{app}{link}")
    assert at_provider.url.path == "/login/", at_provider.text[:300]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', at_provider.text).group(1)
    landed = client.post(
        str(at_provider.url),
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": token,
            "next": at_provider.url.params["next"],
        },
    )
    return client, landed


def test_an_organization_user_signs_in_into_the_team_their_group_maps_to(
    oidc_settings, live_server, cast
):
    client, landed = _sign_in(live_server.url, "alice")
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
    _sign_in(live_server.url, "alice")
    assert get_user_model().objects.filter(username__startswith="alice-").count() == 1


def test_a_user_in_no_mapped_group_is_refused(oidc_settings, live_server, cast):
    users_before = get_user_model().objects.count()
    client, landed = _sign_in(live_server.url, "mallory")
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


def _leave_group(provider_db: Path, username: str, group: str) -> None:
    """The organization takes a person out of a group (in the provider's own database)."""
    with sqlite3.connect(provider_db) as db:
        db.execute(
            "DELETE FROM auth_user_groups WHERE user_id = (SELECT id FROM auth_user WHERE"
            " username = ?) AND group_id = (SELECT id FROM auth_group WHERE name = ?)",
            (username, group),
        )


def test_every_sign_in_applies_the_groups_of_that_moment(
    oidc_settings, live_server, cast, tmp_path
):
    _sign_in(live_server.url, "alice")
    user = ExternalIdentity.objects.get().user
    assert user.has_perm("playground.use_playground")
    provider_db = tmp_path / "provider.sqlite3"
    _leave_group(provider_db, "alice", "playground-users")
    _leave_group(provider_db, "alice", "essays-admins")
    client, _ = _sign_in(live_server.url, "alice")
    user = get_user_model().objects.get(pk=user.pk)  # fresh permission cache
    assert not user.has_perm("playground.use_playground")
    assert not Membership.objects.get(user=user).is_admin
    assert client.get(f"{live_server.url}/playground/").status_code == 403
    _leave_group(provider_db, "alice", "essays")  # now in no mapped group: refused
    client, landed = _sign_in(live_server.url, "alice")
    assert landed.url.path == "/accounts/login/" and 'id="oidc-refused"' in landed.text
    assert client.get(f"{live_server.url}/checks/").url.path == "/accounts/login/"
