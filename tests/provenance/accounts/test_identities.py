"""Organization users confirmed at the provider between sign-ins: a person removed at the
provider loses every API token and session at the next pass, one still there is confirmed
with the groups of that moment, and a provider that cannot be reached changes nothing. The
provider is real (django-oidc-provider on loopback, ``conftest.py``)."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from knox.models import get_token_model

from provenance.accounts import identities
from provenance.accounts.models import ExternalIdentity, Membership
from provenance.accounts.services import api_token_rotate
from provenance.lib.crypto import decrypt_bytes
from provenance.runner.redis_server import free_port
from tests.provenance.oidc_provider.flow import leave_group, remove_person, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _signed_in_with_a_token(app: str) -> tuple[httpx.Client, ExternalIdentity, str]:
    client, landed = sign_in(app, "alice")
    assert landed.url.path == "/"
    identity = ExternalIdentity.objects.select_related("user").get()
    _, key = api_token_rotate(user=identity.user)
    assert httpx.get(f"{app}/api/v1/checks", headers={"Authorization": f"Token {key}"}).is_success
    return client, identity, key


def _due(identity: ExternalIdentity) -> None:
    old = timezone.now() - timedelta(hours=1)
    ExternalIdentity.objects.filter(pk=identity.pk).update(checked_at=old)


def test_sign_in_keeps_the_refresh_token_under_the_kek_and_a_fresh_identity_is_not_due(
    oidc_settings, live_server, cast
):
    _, identity, _ = _signed_in_with_a_token(live_server.url)
    stored = bytes(identity.encrypted_refresh_token)
    refresh = decrypt_bytes(stored).decode()
    assert len(refresh) >= 16 and refresh.encode() not in stored
    assert identity.confirmed_at is not None and identity.checked_at is not None
    assert not identities.identities_due().exists()
    assert identities.identities_confirm() == identities.Confirmed()  # nothing asked


def test_a_person_removed_at_the_provider_loses_tokens_and_sessions_at_the_next_pass(
    oidc_settings, live_server, cast, tmp_path
):
    client, identity, key = _signed_in_with_a_token(live_server.url)
    remove_person(tmp_path / "provider.sqlite3", "alice")
    # Until the pass, nothing tells the product: the token and the session still work.
    headers = {"Authorization": f"Token {key}"}
    assert httpx.get(f"{live_server.url}/api/v1/checks", headers=headers).is_success
    _due(identity)
    assert identities.identities_confirm() == identities.Confirmed(deprovisioned=1)
    user = get_user_model().objects.get(pk=identity.user.pk)
    assert not user.is_active and not get_token_model().objects.filter(user=user).exists()
    assert httpx.get(f"{live_server.url}/api/v1/checks", headers=headers).status_code == 401
    assert client.get(f"{live_server.url}/checks/").url.path == "/accounts/login/"
    assert not identities.identities_due().exists()  # an inactive user is not asked again


def test_a_person_still_there_is_confirmed_with_the_groups_of_that_moment(
    oidc_settings, live_server, cast, tmp_path
):
    client, identity, key = _signed_in_with_a_token(live_server.url)
    before = identity.confirmed_at
    leave_group(tmp_path / "provider.sqlite3", "alice", "essays-admins")
    _due(identity)
    assert identities.identities_confirm() == identities.Confirmed(confirmed=1)
    identity.refresh_from_db()
    assert identity.confirmed_at > before and identity.user.is_active
    assert not Membership.objects.get(user=identity.user).is_admin  # the provider's groups now
    assert get_token_model().objects.filter(user=identity.user).exists()
    assert decrypt_bytes(identity.encrypted_refresh_token)  # the (rotated) token still kept
    # Taken out of every mapped group: signed out everywhere, as at a sign-in.
    leave_group(tmp_path / "provider.sqlite3", "alice", "essays")
    _due(identity)
    assert identities.identities_confirm() == identities.Confirmed(confirmed=1)
    assert not get_token_model().objects.filter(user=identity.user).exists()
    assert client.get(f"{live_server.url}/checks/").url.path == "/accounts/login/"


def test_a_provider_that_cannot_be_reached_changes_nothing_and_is_asked_again_later(
    oidc_settings, live_server, cast
):
    _, identity, key = _signed_in_with_a_token(live_server.url)
    oidc_settings.OIDC_OP_TOKEN_ENDPOINT = f"http://127.0.0.1:{free_port()}/openid/token"
    _due(identity)
    assert identities.identities_confirm() == identities.Confirmed(unreachable=1)
    identity.refresh_from_db()
    assert identity.user.is_active and get_token_model().objects.filter(user=identity.user)
    assert identity.checked_at > timezone.now() - timedelta(minutes=1)
    assert not identities.identities_due().exists()  # not again before the interval


def test_nothing_is_asked_unless_organization_sign_in_is_on(db, settings):
    settings.PROVENANCE_OIDC = {**settings.PROVENANCE_OIDC, "ENABLED": False}
    assert identities.identities_confirm() == identities.Confirmed()
