"""A fake peer organization in the test process (a thread): serves a discovery document, a
key set (by default not the one its receipts are signed with), an ALTCHA challenge and
answers that claim "watermarked"; records every request it gets."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import altcha

from detector.reports.receipt import sign_receipt
from detector.reports.signed import generate_signing_key, text_sha256


class FakePeer(ThreadingHTTPServer):
    """Serves a discovery document, a key set, a challenge and answers; records requests."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.signer = generate_signing_key().as_dict(private=True)
        self.jwks = {"keys": [generate_signing_key().as_dict(private=False)]}  # not the signer
        self.hmac = "fake-peer-hmac"
        self.endpoint = ""
        self.receipt_text = ""  # "" : about the text asked

    def trust(self) -> None:
        """Publish the key the receipts are signed with."""
        self.jwks = {"keys": [{k: v for k, v in self.signer.items() if k != "d"}]}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def document(self) -> dict[str, Any]:
        return {
            "schema": "provenance.discovery/v1",
            "organization": {"name": "Fake"},
            "verification": {
                "endpoint": self.endpoint or f"{self.url}/verify",
                "challenge": f"{self.url}/challenge",
            },
            "jwks_uri": f"{self.url}/jwks",
        }


class _Handler(BaseHTTPRequestHandler):
    server: FakePeer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, body: Any, status: int = 200) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:  # noqa: N802
        fake = self.server
        fake.requests.append({"path": self.path, "headers": dict(self.headers)})
        if self.path.startswith("/.well-known"):
            self._send(fake.document())
        elif self.path == "/jwks":
            self._send(fake.jwks)
        else:
            options = altcha.ChallengeOptionsV1(max_number=500, hmac_key=fake.hmac)
            self._send(altcha.create_challenge_v1(options).to_dict())

    def do_POST(self) -> None:  # noqa: N802
        fake = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = dict(self.headers)
        ok, _ = altcha.verify_solution_v1(headers.get("X-Provenance-PoW", ""), fake.hmac)
        fake.requests.append({"path": self.path, "headers": headers, "body": body, "pow": ok})
        payload = {
            "issuer": "Fake",
            "text": {"sha256": text_sha256(fake.receipt_text or body["text"])},
            "verdict": "watermarked",
            "model": "Fake model",
            "strength": -30,
            "tokens_scored": 99,
            "models": ["Fake model"],
            "at": "2026-01-01T00:00:00+00:00",
        }
        answer = {k: payload[k] for k in ("verdict", "model", "strength", "tokens_scored")}
        self._send({**answer, "receipt": sign_receipt(payload, fake.signer)})
