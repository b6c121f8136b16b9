"""What a person does at the provider: sign in through the app's button, and what the
organization does there: take a person out of a group, or remove them."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import httpx

from tests.provenance.oidc_provider.setup import PASSWORD

CLIENT_ID, CLIENT_SECRET = "provenance-app", "provenance-app-secret"


def sign_in(app: str, username: str) -> tuple[httpx.Client, httpx.Response]:
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


def leave_group(provider_db: Path, username: str, group: str) -> None:
    """The organization takes a person out of a group (in the provider's own database)."""
    with sqlite3.connect(provider_db) as db:
        db.execute(
            "DELETE FROM auth_user_groups WHERE user_id = (SELECT id FROM auth_user WHERE"
            " username = ?) AND group_id = (SELECT id FROM auth_group WHERE name = ?)",
            (username, group),
        )


def remove_person(provider_db: Path, username: str) -> None:
    """The organization deletes a person's account at the provider: their grants and tokens
    go with it."""
    with sqlite3.connect(provider_db) as db:
        user = "(SELECT id FROM auth_user WHERE username = ?)"
        for table in ("oidc_provider_token", "oidc_provider_code", "oidc_provider_userconsent"):
            db.execute(f"DELETE FROM {table} WHERE user_id = {user}", (username,))
        db.execute(f"DELETE FROM auth_user_groups WHERE user_id = {user}", (username,))
        db.execute("DELETE FROM auth_user WHERE username = ?", (username,))
