"""Audit callbacks: signed POSTs to a local receiver, retries with backoff after a 500,
refusal of private targets (SSRF), the secret shown once, deliveries in the admin."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import httpx
import pytest

from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Audit, Check
from provenance.webhooks import services
from provenance.webhooks.models import TeamWebhook, WebhookDelivery
from provenance.webhooks.tasks import webhook_deliver_task
from tests.waiting import wait_until


class Receiver:
    """A local HTTP server that records each POST and answers the next queued status."""

    def __init__(self, statuses: list[int] | None = None):
        self.statuses = list(statuses or [])
        self.requests: list[tuple[float, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((time.monotonic(), dict(self.headers), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", f"{receiver.url}/moved")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def allow_local(settings):
    settings.PROVENANCE_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def secret(cast):
    _, value = services.webhook_secret_rotate(team=cast["acme"])
    return value


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


def _delivery(cast, url: str) -> WebhookDelivery:
    payload = {"event": "audit.finished", "audit": {"id": "x"}}
    return WebhookDelivery.objects.create(
        team=cast["acme"], event="audit.finished", url=url, payload=payload
    )


def _verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    fields = dict(part.split("=", 1) for part in headers["X-Provenance-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(fields["v1"], expected.hexdigest())


def _finished_audit(api_for, texts, callback_url="") -> Audit:
    items = [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
    body = {"texts": items, **({"callback_url": callback_url} if callback_url else {})}
    response = api_for("alice").post("/api/v1/audits", body, format="json")
    assert response.status_code == 202, response.content
    audit_id = response.json()["id"]
    audit_score_chunk(audit_id, list(Check.objects.values_list("id", flat=True)))
    return Audit.objects.get(id=audit_id)


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
    audit = _finished_audit(api_for, [wm_text, human_text], callback_url=receiver.url)
    delivery = WebhookDelivery.objects.get(audit=audit)
    webhook_deliver_task.apply(args=[str(delivery.id)])
    assert len(receiver.requests) == 1
    _, headers, body = receiver.requests[0]
    assert _verify(secret, headers, body)
    assert not _verify(secret + "x", headers, body)
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
    audit = _finished_audit(api_for, [human_text])
    assert WebhookDelivery.objects.get(audit=audit).url == receiver.url


def test_without_a_url_or_a_secret_nothing_is_queued(api_for, alice_key, human_text, cast):
    _finished_audit(api_for, [human_text], callback_url="https://93.184.216.34/hook")
    assert not WebhookDelivery.objects.exists()  # no team secret to sign with


def test_a_500_is_retried_until_the_receiver_accepts(
    api_for, alice_key, human_text, receiver, allow_local, secret
):
    receiver.statuses = [500, 502]
    audit = _finished_audit(api_for, [human_text], callback_url=receiver.url)
    delivery = WebhookDelivery.objects.get(audit=audit)
    webhook_deliver_task.apply(args=[str(delivery.id)])  # eager: retries run at once
    assert len(receiver.requests) == 3
    ids = {headers["X-Provenance-Delivery"] for _, headers, _ in receiver.requests}
    assert ids == {str(delivery.id)}
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 3


def test_a_receiver_that_keeps_failing_is_given_up_after_the_last_retry(
    api_for, alice_key, human_text, receiver, allow_local, secret, monkeypatch
):
    monkeypatch.setattr(webhook_deliver_task, "max_retries", 2)
    receiver.statuses = [500] * 10
    audit = _finished_audit(api_for, [human_text], callback_url=receiver.url)
    delivery = WebhookDelivery.objects.get(audit=audit)
    webhook_deliver_task.apply(args=[str(delivery.id)])
    assert len(receiver.requests) == 3
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 3
    assert "500" in delivery.last_error


def test_the_connection_goes_to_the_address_vetted_not_to_a_second_dns_answer(
    receiver, allow_local, dns, cast, secret
):
    # A rebinding resolver: the first answer is the receiver, later ones point elsewhere
    # (127.0.0.3, where nothing listens). Resolving again at connect time would miss it.
    dns.answers[:] = ["127.0.0.1", "127.0.0.3"]
    port = receiver.server.server_port
    delivery = _delivery(cast, f"http://hooks.example:{port}/hook")
    services.delivery_attempt(delivery.id)
    assert dns.lookups == 1 and len(receiver.requests) == 1
    _, headers, body = receiver.requests[0]
    assert headers["Host"] == f"hooks.example:{port}" and _verify(secret, headers, body)


def test_a_host_rebound_to_a_private_address_after_the_audit_is_refused_at_delivery(
    api_for, alice_key, human_text, receiver, dns, cast, secret
):
    dns.answers[:] = ["93.184.216.34", "127.0.0.1"]  # public when the audit is accepted
    url = f"http://hooks.example:{receiver.server.server_port}/hook"
    audit = _finished_audit(api_for, [human_text], callback_url=url)
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
    services.delivery_attempt(_delivery(cast, "https://hooks.example/hook?x=1").id)
    (request,) = sent
    assert str(request.url) == "https://93.184.216.34/hook?x=1"
    assert request.headers["Host"] == "hooks.example"
    assert request.extensions["sni_hostname"] == "hooks.example" and dns.lookups == 1


def test_a_redirect_is_not_followed(receiver, allow_local, cast, secret):
    receiver.statuses = [302]
    with pytest.raises(services.DeliveryFailed, match="answered 302"):
        services.delivery_attempt(_delivery(cast, receiver.url).id)
    assert len(receiver.requests) == 1


def test_a_callback_url_with_a_bad_port_is_refused():
    with pytest.raises(services.CallbackRefused, match="not a valid URL"):
        services.callback_url_validate("http://hooks.example:99999/hook")


def test_the_backoff_doubles_from_the_configured_base():
    from celery.utils.time import get_exponential_backoff_interval

    base = webhook_deliver_task.retry_backoff
    waits = [
        get_exponential_backoff_interval(base, n, webhook_deliver_task.retry_backoff_max, False)
        for n in range(4)
    ]
    assert waits == [base, 2 * base, 4 * base, 8 * base]


def test_the_secret_is_shown_once_in_the_admin_and_never_stored_in_clear(admin_client, cast):
    response = admin_client.post(
        "/admin/webhooks/teamwebhook/add/", {"team": cast["acme"].id, "default_url": ""}
    )
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    page = response.content.decode()
    secret = page.split('id="webhook-secret">')[1].split("<")[0]
    assert secret.startswith("whsec_")
    webhook = TeamWebhook.objects.get(team=cast["acme"])
    assert secret.encode() not in bytes(webhook.encrypted_secret)
    change = admin_client.get(f"/admin/webhooks/teamwebhook/{webhook.id}/change/")
    assert secret not in change.content.decode()


def test_deliveries_are_listed_in_the_admin(
    admin_client, api_for, alice_key, human_text, receiver, allow_local, secret
):
    audit = _finished_audit(api_for, [human_text], callback_url=receiver.url)
    webhook_deliver_task.apply(args=[str(WebhookDelivery.objects.get(audit=audit).id)])
    page = admin_client.get("/admin/webhooks/webhookdelivery/").content.decode()
    assert receiver.url in page and "delivered" in page


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
        assert _verify(secret, headers, payload)
        assert json.loads(payload)["audit"]["id"] == audit_id
        wait_until(lambda: WebhookDelivery.objects.get().status == "delivered", 10)
    finally:
        receiver.close()
