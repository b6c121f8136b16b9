"""Organization users confirmed at the provider between sign-ins.

A person deleted or disabled at the organization's identity provider sends no signal to the
product: without one, their API tokens (which never pass through the provider) would keep
working until they expire. So each sweeper pass asks the provider about the organization
users last confirmed more than ``PROVENANCE_OIDC_RENEW_SECONDS`` ago, with the refresh token
of their last sign-in (kept under the KEK):

- the provider refreshes it: the user is confirmed, the new refresh token kept, and the groups
  of its userinfo answer applied as at a sign-in (no mapped group left: every session and API
  token revoked, as ``OrganizationBackend.verify_claims`` does);
- the provider refuses it (``invalid_grant``: the user, or the grant, is gone): the user is
  deactivated, which revokes every API token and session at once (``accounts.signals``);
- the provider cannot be reached or answers otherwise: nothing changes, and that user is
  asked again after the same interval.

A sign-in that brings no refresh token keeps the one stored before. Users for whom none was
ever issued (some providers issue one only for an ``offline_access`` scope) cannot be asked:
their sessions are re-checked on pages by the session refresh, and accepted on ``/api/``
(exempt from that refresh) only while its last check is fresh
(``provenance.accounts.auth.SessionAuthentication``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import requests
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from provenance.accounts.models import ExternalIdentity
from provenance.lib.crypto import KeyDecryptionError, decrypt_bytes, encrypt_bytes

logger = logging.getLogger(__name__)
PASS_BUDGET_S = 2.0  # seconds of provider calls a sweeper pass spends at most
PASS_LIMIT = 50  # identities a pass asks about at most


@dataclass
class Confirmed:
    confirmed: int = 0
    deprovisioned: int = 0
    unreachable: int = 0


def identities_due(now: Any = None) -> Any:
    """Identities with a refresh token, of active users, not asked for an interval."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS)
    return (
        ExternalIdentity.objects.filter(user__is_active=True, encrypted_refresh_token__isnull=False)
        .filter(Q(checked_at__isnull=True) | Q(checked_at__lt=stale))
        .select_related("user")
        .order_by("checked_at")
    )


def identities_confirm(*, budget_s: float = PASS_BUDGET_S, limit: int = PASS_LIMIT) -> Confirmed:
    """Ask the provider about the identities due (``identities_due``), oldest first, until
    ``limit`` or ``budget_s`` seconds of calls; off when organization sign-in is."""
    found = Confirmed()
    if not settings.PROVENANCE_OIDC["ENABLED"]:
        return found
    started = time.monotonic()
    for identity in identities_due()[:limit]:
        outcome = identity_confirm(identity)
        setattr(found, outcome, getattr(found, outcome) + 1)
        if time.monotonic() - started > budget_s:
            break
    return found


def identity_confirm(identity: ExternalIdentity) -> str:
    """Ask the provider about one identity: "confirmed", "deprovisioned" or "unreachable"."""
    from provenance.accounts.oidc import OrganizationBackend

    ExternalIdentity.objects.filter(pk=identity.pk).update(checked_at=timezone.now())
    stored = identity.encrypted_refresh_token
    if stored is None:  # signed in without one since it was selected
        return "unreachable"
    try:
        refresh = decrypt_bytes(stored).decode()
    except KeyDecryptionError:
        logger.warning("identity %s: refresh token does not decrypt; not asked", identity.pk)
        return "unreachable"
    try:
        answer = _refresh(refresh)
    except requests.RequestException as exc:
        logger.warning("identity %s: provider unreachable (%s)", identity.pk, type(exc).__name__)
        return "unreachable"
    if answer.status_code == 400 and _error(answer) == "invalid_grant":
        user = identity.user
        user.is_active = False
        user.save(update_fields=["is_active"])  # every API token and session goes (signals)
        logger.warning("user %s: unknown to the provider now; deactivated", user.pk)
        return "deprovisioned"
    tokens = _json(answer) if answer.status_code == 200 else None
    if not tokens or not isinstance(tokens.get("access_token"), str):
        logger.warning("identity %s: provider answered %s", identity.pk, answer.status_code)
        return "unreachable"
    backend = OrganizationBackend()
    try:
        claims = backend.get_userinfo(tokens["access_token"], tokens.get("id_token"), None)
    except requests.RequestException as exc:
        logger.warning("identity %s: userinfo unreachable (%s)", identity.pk, type(exc).__name__)
        return "unreachable"
    if not isinstance(claims, dict) or claims.get("sub") != identity.subject:
        logger.warning("identity %s: userinfo names another subject; not confirmed", identity.pk)
        return "unreachable"
    now = timezone.now()
    kept = tokens.get("refresh_token") or refresh  # providers that rotate give a new one
    ExternalIdentity.objects.filter(pk=identity.pk).update(
        encrypted_refresh_token=encrypt_bytes(str(kept).encode()), confirmed_at=now
    )
    if backend.verify_claims(claims):  # no mapped group left: revoked there
        backend.apply_groups(identity.user, claims)
    return "confirmed"


def _refresh(refresh: str) -> requests.Response:
    data = {"grant_type": "refresh_token", "refresh_token": refresh}
    # Set with the provider's endpoints only when organization sign-in is on.
    client = (settings.OIDC_RP_CLIENT_ID, getattr(settings, "OIDC_RP_CLIENT_SECRET", ""))
    auth = None
    if getattr(settings, "OIDC_TOKEN_USE_BASIC_AUTH", False):
        auth = client
    else:
        data.update(client_id=client[0], client_secret=client[1])
    return requests.post(
        getattr(settings, "OIDC_OP_TOKEN_ENDPOINT", ""),
        data=data,
        auth=auth,
        timeout=min(settings.OIDC_TIMEOUT, 5),
        verify=getattr(settings, "OIDC_VERIFY_SSL", True),
        allow_redirects=False,
    )


def _json(answer: requests.Response) -> dict[str, Any] | None:
    try:
        body = answer.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _error(answer: requests.Response) -> str | None:
    body = _json(answer)
    return None if body is None else str(body.get("error"))
