"""Audit callbacks: signed POSTs to a local receiver, retries with backoff after a 500,
refusal of private targets (SSRF), the secret shown once, deliveries in the admin."""

from __future__ import annotations

import json
import socket
from types import SimpleNamespace

import httpx
import pytest

from provenance.audits.models import Audit
from provenance.checks.models import Check
from provenance.webhooks import services
from provenance.webhooks.models import TeamWebhook, WebhookDelivery
from provenance.webhooks.tasks import webhook_deliver_task
from tests.provenance.webhooks.hooks import Receiver, delivery_row, finished_audit, signed_by
from tests.waiting import wait_until


@pytest.fixture
def dns(monkeypatch):
    """A resolver for hooks.example that answers each lookup with the next queued address (the
    last one repeats) and counts the lookups; other names resolve as usual."""
    real = socket.getaddrinfo
    fake = SimpleNamespace(answers=[], lookups=0)

    def getaddrinfo(host, port, *args, **kwargs):
        if host != "hooks.example":
            return real(host, port, *args, **kwargs)
        fake.lookups += 1
        address = fake.answers.pop(0) if len(fake.answers) > 1 else fake.answers[0]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return fake


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
    ],
)
def test_private_loopback_and_link_local_targets_are_refused(url):
    with pytest.raises(services.CallbackRefused, match="private, loopback or link-local"):
        services.callback_url_validate(url)


@pytest.mark.parametrize(
    "url", ["ftp://93.184.216.34/x", "file:///etc/passwd", "http://user:pw@93.184.216.34/"]
)
def test_other_schemes_and_credentials_are_refused(url):
    with pytest.raises(services.CallbackRefused):
        services.callback_url_validate(url)


def test_a_public_address_is_accepted_and_settings_can_allow_private_ones(settings):
    assert services.callback_url_validate("https://93.184.216.34/hook")
    settings.PROVENANCE_WEBHOOK_ALLOW_PRIVATE = True
    assert services.callback_url_validate("http://127.0.0.1:9/hook")


def test_an_audit_with_a_refused_callback_is_a_400_and_stores_nothing(api_for, alice_key):
    body = {"texts": [{"text": "a text"}], "callback_url": "http://169.254.169.254/"}
    response = api_for("alice").post("/api/v1/audits", body, format="json")
    assert response.status_code == 400 and response.json()["code"] == "callback_refused"
    assert not Audit.objects.exists() and not Check.objects.exists()


def test_a_finished_audit_posts_its_summary_signed_with_the_team_secret(
    api_for, alice_key, wm_text, human_text, receiver, allow_local, secret
):
    audit = finished_audit(api_for, [wm_text, human_text], callback_url=receiver.url)
    delivery = WebhookDelivery.objects.get(audit=audit)
    webhook_deliver_task.apply(args=[str(delivery.id)])
    assert len(receiver.requests) == 1
    _, headers, body = receiver.requests[0]
    assert signed_by(secret, headers, body)
    assert not signed_by(secret + "x", headers, body)
    assert headers["X-Provenance-Event"] == "audit.finished"
    assert headers["X-Provenance-Delivery"] == str(delivery.id)
    summary = json.loads(body)
    assert summary["audit"]["id"] == str(audit.id) and summary["audit"]["status"] == "done"
    assert summary["audit"]["counts"]["watermarked"] == 1 and summary["delivery"] == str(
        delivery.id
    )
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 1
    assert delivery.last_status_code == 200


def test_the_team_default_url_is_used_when_the_audit_names_none(
    api_for, alice_key, human_text, receiver, allow_local, cast, secret
):
    TeamWebhook.objects.filter(team=cast["acme"]).update(default_url=receiver.url)
    audit = finished_audit(api_for, [human_text])
    assert WebhookDelivery.objects.get(audit=audit).url == receiver.url


def test_without_a_url_or_a_secret_nothing_is_queued(api_for, alice_key, human_text, cast):
    finished_audit(api_for, [human_text], callback_url="https://93.184.216.34/hook")
    assert not WebhookDelivery.objects.exists()  # no team secret to sign with


def test_the_connection_goes_to_the_address_vetted_not_to_a_second_dns_answer(
    receiver, allow_local, dns, cast, secret
):
    # A rebinding resolver: the first answer is the receiver, later ones point elsewhere
    # (127.0.0.3, where nothing listens). Resolving again at connect time would miss it.
    dns.answers[:] = ["127.0.0.1", "127.0.0.3"]
    port = receiver.server.server_port
    delivery = delivery_row(cast, f"http://hooks.example:{port}/hook")
    services.delivery_attempt(delivery.id)
    assert dns.lookups == 1 and len(receiver.requests) == 1
    _, headers, body = receiver.requests[0]
    assert headers["Host"] == f"hooks.example:{port}" and signed_by(secret, headers, body)


def test_a_host_rebound_to_a_private_address_after_the_audit_is_refused_at_delivery(
    api_for, alice_key, human_text, receiver, dns, cast, secret
):
    dns.answers[:] = ["93.184.216.34", "127.0.0.1"]  # public when the audit is accepted
    url = f"http://hooks.example:{receiver.server.server_port}/hook"
    audit = finished_audit(api_for, [human_text], callback_url=url)
    delivery = WebhookDelivery.objects.get(audit=audit)
    with pytest.raises(services.DeliveryFailed, match="127.0.0.1, a private, loopback"):
        services.delivery_attempt(delivery.id)
    assert not receiver.requests


def test_https_keeps_the_host_name_for_tls_while_connecting_to_the_vetted_address(
    dns, cast, secret, monkeypatch
):
    dns.answers[:] = ["93.184.216.34", "127.0.0.1"]
    sent: list[httpx.Request] = []

    def send(client, request, **kwargs):
        sent.append(request)
        return httpx.Response(204, request=request)

    monkeypatch.setattr(httpx.Client, "send", send)
    services.delivery_attempt(delivery_row(cast, "https://hooks.example/hook?x=1").id)
    (request,) = sent
    assert str(request.url) == "https://93.184.216.34/hook?x=1"
    assert request.headers["Host"] == "hooks.example"
    assert request.extensions["sni_hostname"] == "hooks.example" and dns.lookups == 1


def test_a_redirect_is_not_followed(receiver, allow_local, cast, secret):
    receiver.statuses = [302]
    with pytest.raises(services.DeliveryFailed, match="answered 302"):
        services.delivery_attempt(delivery_row(cast, receiver.url).id)
    assert len(receiver.requests) == 1


def test_a_callback_url_with_a_bad_port_is_refused():
    with pytest.raises(services.CallbackRefused, match="not a valid URL"):
        services.callback_url_validate("http://hooks.example:99999/hook")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_worker_delivers_with_backoff_after_a_500(
    celery_worker, api_for, alice_key, human_text, settings
):
    # The worker runs with PROVENANCE_WEBHOOK_ALLOW_PRIVATE=1 and a 1 s backoff (conftest).
    settings.PROVENANCE_WEBHOOK_ALLOW_PRIVATE = True
    receiver = Receiver([500])
    try:
        from provenance.accounts.models import Team

        secret = services.webhook_secret_rotate(team=Team.objects.get(name="acme"))[1]
        items = [{"client_id": "a", "text": human_text}]
        body = {"texts": items, "callback_url": receiver.url}
        audit_id = api_for("alice").post("/api/v1/audits", body, format="json").json()["id"]
        wait_until(lambda: len(receiver.requests) >= 2, 60)
        (first, _, _), (second, headers, payload) = receiver.requests[:2]
        assert second - first >= 0.9  # the first retry waits the 1 s base
        assert signed_by(secret, headers, payload)
        assert json.loads(payload)["audit"]["id"] == audit_id
        wait_until(lambda: WebhookDelivery.objects.get().status == "delivered", 10)
    finally:
        receiver.close()
