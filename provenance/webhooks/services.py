"""Webhook writes: the team secret (generated, shown once), callback URL checks (SSRF),
deliveries created when an audit finishes and each attempt to send one.

A callback is a POST of JSON with three headers: ``X-Provenance-Event``,
``X-Provenance-Delivery`` (the delivery's id, the same on every retry) and
``X-Provenance-Signature: t=<unix seconds>,v1=<hex>``, where ``v1`` is
HMAC-SHA256(secret, f"{t}.{body}"). Receivers recompute it over the raw body and refuse
stale timestamps. Failed attempts (network errors, non-2xx answers) are retried by the task
with exponential backoff; private, loopback and link-local targets are refused unless
``PROVENANCE_WEBHOOK_ALLOW_PRIVATE`` is set. The host is resolved once per attempt and the
connection made to the vetted address (no second lookup to rebind), with no redirects.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from provenance.accounts.models import Team
from provenance.celery import publish
from provenance.errors import ProblemError
from provenance.lib.addresses import wrapped_ipv4
from provenance.lib.crypto import decrypt_bytes, encrypt_bytes
from provenance.webhooks.models import TeamWebhook, WebhookDelivery

DELIVER = "provenance.webhooks.deliver"  # the task's registered name
AUDIT_FINISHED = "audit.finished"


class CallbackRefused(ProblemError):
    default_code = "callback_refused"


class DeliveryFailed(Exception):
    """One attempt failed in a way worth retrying; the message is safe to log."""


# --- the secret -------------------------------------------------------------------------


@sensitive_variables("secret")
def webhook_secret_rotate(*, team: Team, default_url: str | None = None) -> tuple[TeamWebhook, str]:
    """Generate a new signing secret for ``team`` (creating its webhook settings if needed);
    returns the row and the secret, which is never readable again."""
    secret = "whsec_" + secrets.token_urlsafe(32)
    webhook, _ = TeamWebhook.objects.get_or_create(
        team=team, defaults={"encrypted_secret": encrypt_bytes(secret.encode())}
    )
    webhook.encrypted_secret = encrypt_bytes(secret.encode())
    webhook.secret_created_at = timezone.now()
    if default_url is not None:
        webhook.default_url = callback_url_validate(default_url) if default_url else ""
    webhook.save()
    return webhook, secret


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Provenance-Signature`` value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


# --- SSRF -------------------------------------------------------------------------------

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class _Target:
    """A callback URL after its one DNS resolution: the connection goes to ``addresses``
    (every one vetted), never to a second answer for ``url``'s host (DNS rebinding)."""

    url: httpx.URL
    addresses: tuple[_Address, ...]


def callback_url_validate(url: str) -> str:
    """An http(s) URL whose host resolves only to public addresses (unless settings allow
    private ones); raises ``CallbackRefused`` naming the reason."""
    _target(url)
    return url


def _target(url: str) -> _Target:
    if len(url) > 500:
        raise CallbackRefused("callback_url is longer than 500 characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CallbackRefused("callback_url must be an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise CallbackRefused("callback_url must not carry credentials")
    try:
        parsed = httpx.URL(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)  # ValueError past 65535
    except (httpx.InvalidURL, ValueError):
        raise CallbackRefused("callback_url is not a valid URL") from None
    addresses = _addresses(parsed.raw_host.decode("ascii"), port)
    for address in addresses:
        _address_allowed(address)
    return _Target(url=parsed, addresses=addresses)


def _addresses(host: str, port: int) -> tuple[_Address, ...]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        raise CallbackRefused(f"callback_url host {host!r} does not resolve") from None
    # sockaddr[0] is the address as text (an int only for AF_CAN/AF_PACKET, never here)
    found = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not found:
        raise CallbackRefused(f"callback_url host {host!r} does not resolve")
    return tuple(dict.fromkeys(found))  # in the resolver's order, each once


# Not globally reachable whatever ``ipaddress`` says of them in this Python: the local-use
# NAT64 prefix (RFC 8215) and the IPv4-compatible and IPv4-translated forms (their IPv4
# inside is vetted too, ``wrapped_ipv4``).
_NOT_GLOBAL = tuple(
    ipaddress.ip_network(net) for net in ("64:ff9b:1::/48", "::/96", "::ffff:0:0:0/96")
)


def _reached(address: _Address) -> list[_Address]:
    """The addresses a connection to ``address`` may end at: itself and every IPv4 address
    it may stand for (``provenance.lib.addresses.wrapped_ipv4``: mapped, compatible,
    translated, NAT64, 6to4, Teredo, ISATAP)."""
    return [address, *wrapped_ipv4(address)]


def _public(address: _Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # the IPv4 address itself, on the wire
            return True
        if any(address in net for net in _NOT_GLOBAL):
            return False
    return address.is_global and not address.is_multicast


def _address_allowed(address: _Address) -> None:
    # Globally reachable only (ipaddress's is_global: not private, loopback, link-local,
    # shared 100.64.0.0/10 such as cloud metadata at 100.100.100.200, ...), never multicast.
    public = all(_public(a) for a in _reached(address))
    if not public and not settings.PROVENANCE_WEBHOOK_ALLOW_PRIVATE:
        raise CallbackRefused(
            f"callback_url resolves to {address}, a private, loopback or link-local address "
            "(or another that is not globally reachable)"
        )


# --- deliveries -------------------------------------------------------------------------


def audit_finished(audit: Any, counts: dict[str, int]) -> WebhookDelivery | None:
    """Queue the callback of a finished audit (its own URL, else the team's default), its
    texts counted by the audits app (``counts``); None when there is nowhere to send it or
    the team has no secret to sign with."""
    webhook = TeamWebhook.objects.filter(team_id=audit.team_id).first()
    url = audit.callback_url or (webhook.default_url if webhook else "")
    if not url or webhook is None:
        return None
    delivery = WebhookDelivery.objects.create(
        team_id=audit.team_id,
        audit=audit,
        event=AUDIT_FINISHED,
        url=url,
        payload=_summary(audit, counts),
    )
    transaction.on_commit(lambda: publish(DELIVER, str(delivery.id)))
    return delivery


def _summary(audit: Any, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "event": AUDIT_FINISHED,
        "audit": {
            "id": str(audit.id),
            "status": audit.status,
            "num_texts": audit.num_texts,
            "counts": counts,
            "threshold": audit.threshold,
            "key_ids": audit.key_ids,
            "created_at": audit.created_at.isoformat(),
            "finished_at": audit.finished_at.isoformat() if audit.finished_at else None,
        },
    }


@sensitive_variables("secret")
def delivery_attempt(delivery_id: Any) -> None:
    """Send a delivery once. Returns when it is delivered (or was already); raises
    ``DeliveryFailed`` for an attempt worth retrying. The task owns retries and gives up."""
    delivery = WebhookDelivery.objects.filter(id=delivery_id).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return
    webhook = TeamWebhook.objects.get(team_id=delivery.team_id)
    secret = decrypt_bytes(webhook.encrypted_secret).decode()
    body = json.dumps({**delivery.payload, "delivery": str(delivery.id)}).encode()
    headers = _headers(delivery, signature(secret, int(time.time()), body))
    code, error = _post(delivery.url, body, headers)
    _record(delivery, code, error)
    if error:
        raise DeliveryFailed(error)


def _headers(delivery: WebhookDelivery, signed: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "Provenance-Webhook/1",
        "X-Provenance-Event": delivery.event,
        "X-Provenance-Delivery": str(delivery.id),
        "X-Provenance-Signature": signed,
    }


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str]:
    """(status code, "" on success or the reason it failed). The host is resolved once, here,
    and vetted (DNS may point elsewhere since the audit was accepted); the request goes to a
    vetted address with the URL's own Host header and TLS server name, so a second DNS answer
    (a rebinding attack) is never used. Redirects are not followed."""
    try:
        target = _target(url)
    except CallbackRefused as exc:
        return None, exc.message
    pinned = {**headers, "Host": target.url.netloc.decode("ascii")}
    # The TLS handshake names the host and the certificate is checked against it.
    tls = (
        {"sni_hostname": target.url.raw_host.decode("ascii")}
        if target.url.scheme == "https"
        else {}
    )
    timeout = httpx.Timeout(settings.PROVENANCE_WEBHOOK_TIMEOUT)
    error = ""
    with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        for address in target.addresses:  # the next one only when this one takes no connection
            try:
                response = client.post(
                    target.url.copy_with(host=str(address)),
                    content=body,
                    headers=pinned,
                    extensions=tls,
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                error = f"{type(exc).__name__} while connecting"
                continue
            except httpx.HTTPError as exc:
                return None, f"{type(exc).__name__} while connecting"
            if 200 <= response.status_code < 300:
                return response.status_code, ""
            return response.status_code, f"the receiver answered {response.status_code}"
    return None, error


def _record(delivery: WebhookDelivery, code: int | None, error: str) -> None:
    now = timezone.now()
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.last_status_code = code
    delivery.last_error = error[:300]
    if not error:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = now
    delivery.save()


def delivery_give_up(delivery_id: Any, reason: str) -> None:
    WebhookDelivery.objects.filter(id=delivery_id, status=WebhookDelivery.Status.PENDING).update(
        status=WebhookDelivery.Status.FAILED, last_error=reason[:300]
    )
