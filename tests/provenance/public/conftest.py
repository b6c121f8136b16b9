"""Public verification's cast: alice's key published as "Acme Assistant", an anonymous
client, and a solver of the proof of work (kept small here: 2,000 numbers)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import altcha
import pytest
from rest_framework.test import APIClient

from provenance.keys.services import key_publish
from tests.provenance.public.fake_peer import FakePeer

PUBLIC_NAME = "Acme Assistant"
VERIFY = "/api/public/v1/verify"


@pytest.fixture(autouse=True)
def _small_proof_of_work(settings: Any) -> None:
    settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER = 2000


@pytest.fixture
def published(alice_key):
    return key_publish(key=alice_key, public_name=PUBLIC_NAME)


def solve(challenge: dict[str, Any]) -> str:
    """A solved challenge as the page sends it (base64 JSON)."""
    made = altcha.ChallengeV1(
        challenge["algorithm"],
        challenge["challenge"],
        challenge["maxNumber"],
        challenge["salt"],
        challenge["signature"],
    )
    found = altcha.solve_challenge_v1(made)
    assert found is not None
    return altcha.PayloadV1(
        made.algorithm, made.challenge, found.number, made.salt, made.signature
    ).to_base64()


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture
def check(anon: APIClient) -> Callable[..., Any]:
    """check(text) -> the response of an anonymous check with a fresh proof of work."""

    def run(text: str, client: APIClient | None = None, **extra: Any) -> Any:
        client = client or anon
        proof = solve(client.get("/api/public/v1/challenge").json())
        return client.post(
            VERIFY, {"text": text}, format="json", HTTP_X_PROVENANCE_POW=proof, **extra
        )

    return run


@pytest.fixture
def fake(settings: Any) -> Iterator[FakePeer]:
    """A fake peer, the only one configured."""
    server = FakePeer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.PROVENANCE_PUBLIC_PEERS = [f"{server.url}/.well-known/provenance.json"]
    settings.PROVENANCE_PUBLIC_PEER_KEYS = {}
    settings.PROVENANCE_PUBLIC_PEER_TIMEOUT_S = 5.0
    yield server
    server.shutdown()
    server.server_close()
