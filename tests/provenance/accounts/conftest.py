"""A real OpenID Connect provider (django-oidc-provider in its own Django process on
loopback) and the app configured as its client, for the organization sign-in's tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from provenance.runner.processes import stop_process
from provenance.runner.redis_server import free_port
from tests.provenance.oidc_provider.flow import CLIENT_ID, CLIENT_SECRET
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[3]


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
