"""A local receiver of callbacks and the rows the webhook tests start from."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from provenance.audits.models import Audit
from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Check
from provenance.webhooks.models import WebhookDelivery


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


def delivery_row(cast, url: str) -> WebhookDelivery:
    payload = {"event": "audit.finished", "audit": {"id": "x"}}
    return WebhookDelivery.objects.create(
        team=cast["acme"], event="audit.finished", url=url, payload=payload
    )


def signed_by(secret: str, headers: dict[str, str], body: bytes) -> bool:
    fields = dict(part.split("=", 1) for part in headers["X-Provenance-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(fields["v1"], expected.hexdigest())


def finished_audit(api_for, texts, callback_url="") -> Audit:
    items = [{"client_id": f"doc-{i}", "text": t} for i, t in enumerate(texts)]
    body = {"texts": items, **({"callback_url": callback_url} if callback_url else {})}
    response = api_for("alice").post("/api/v1/audits", body, format="json")
    assert response.status_code == 202, response.content
    audit_id = response.json()["id"]
    audit_score_chunk(audit_id, list(Check.objects.values_list("id", flat=True)))
    return Audit.objects.get(id=audit_id)
