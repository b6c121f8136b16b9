"""Peer organizations over real HTTP: two verifiers on loopback, A and B, each with its own
database, key and signing key, each listing the other. For a partner's check A asks B with
B's proof of work solved server-side, and also lists a closed port and a peer that accepts
connections but never answers; B asks A, even for an anonymous check, with a partner key
registered at A. Then, in this process, a fake peer records what it is sent and answers with
receipts that must not pass, and is never asked for an anonymous check."""

from __future__ import annotations

import concurrent.futures
import functools
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from detector.decision.combined import combine
from detector.reports.receipt import verify_receipt
from detector.reports.signed import text_sha256
from provenance.public import peers, services
from provenance.public.families import TooShort
from provenance.runner.redis_server import free_port
from tests.provenance.public.conftest import PUBLIC_NAME, solve
from tests.provenance.public.instances import Instance
from tests.provenance.watermark import watermarked_text

KEY_A, KEY_B = 0x5EED_A11C_E000_0001, 0x5EED_B0B0_0000_0002
TIMEOUT_S = 6.0  # A's fan-out deadline (the black-hole peer waits it out)
ANSWER_SCHEMA = Path(peers.__file__).parent / "schema" / "answer.schema.json"


@functools.lru_cache
def _marked(key: int, seed: int) -> str:
    # long enough that a verifier without the key answers not_watermarked, not inconclusive
    # (the power of its test; detector.evidence.power)
    return watermarked_text(key, 450, seed=seed)


def _validate(answer: dict[str, Any]) -> None:
    schema = json.loads(ANSWER_SCHEMA.read_text())
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    jsonschema.Draft202012Validator(schema, format_checker=checker).validate(answer)


@pytest.fixture(scope="module")
def black_hole() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, black_hole: int) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("peers")
    a = Instance(root / "a", "Org A", "A model", KEY_A)
    b = Instance(root / "b", "Org B", "B model", KEY_B)
    while b.port == a.port:  # free ports are picked before either binds
        b.port = free_port()
    dead = f"http://127.0.0.1:{free_port()}/.well-known/provenance.json"
    hole = f"http://127.0.0.1:{black_hole}/.well-known/provenance.json"
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # the two migrations at once
            keyed, plain = pool.submit(a.setup, "Org B"), pool.submit(b.setup)
            partner_key, _ = keyed.result(), plain.result()
        a.start(
            PROVENANCE_PUBLIC_PEERS=",".join([b.discovery, dead, hole]),
            PROVENANCE_PUBLIC_PEER_TIMEOUT_S=str(TIMEOUT_S),
            PROVENANCE_PUBLIC_ADDRESS_PER_MIN="1000",
        )
        b.start(
            PROVENANCE_PUBLIC_PEERS=a.discovery,
            PROVENANCE_PUBLIC_PEER_KEYS=f"{a.discovery}={partner_key}",
            PROVENANCE_PUBLIC_ADDRESS_PER_MIN="1000",
        )
        a.wait_ready()
        b.wait_ready()
        yield {"a": a, "b": b, "dead": dead, "hole": hole, "partner_key": partner_key}
    finally:
        a.stop()
        b.stop()


def _check(
    instance: Instance, text: str, key: str | None = None, **body: Any
) -> tuple[dict[str, Any], float]:
    """A check at ``instance``: a partner's with ``key``, else an anonymous one."""
    with httpx.Client(base_url=instance.url, timeout=60) as client:
        if key is not None:
            headers = {"Authorization": f"Bearer {key}"}
        else:
            headers = {"X-Provenance-PoW": solve(client.get("/api/public/v1/challenge").json())}
        started = time.monotonic()
        response = client.post(
            "/api/public/v1/verify", json={"text": text, **body}, headers=headers
        )
        elapsed = time.monotonic() - started
    assert response.status_code == 200, response.text
    return response.json(), elapsed


def _jwks(instance: Instance) -> dict[str, Any]:
    return httpx.get(f"{instance.url}/.well-known/jwks.json", timeout=10).json()


def _decision(receipt: str, instance: Instance) -> dict[str, Any]:
    """A receipt's payload but its time: what the server decided."""
    payload = dict(verify_receipt(receipt, _jwks(instance)).payload)
    payload.pop("at")
    return payload


@pytest.mark.slow
def test_a_text_marked_under_a_is_watermarked_at_a_and_not_at_b(pair, tmp_path):
    a, b = pair["a"], pair["b"]
    text = _marked(KEY_A, 21)
    answer, elapsed = _check(a, text, key=pair["partner_key"])  # a partner of A's
    _validate(answer)
    assert (answer["verdict"], answer["model"]) == ("watermarked", "A model")
    lines = {line["discovery"]: line for line in answer["peers"]}
    assert list(lines) == [b.discovery, pair["dead"], pair["hole"]]
    at_b = lines[b.discovery]
    assert (at_b["organization"], at_b["status"]) == ("Org B", "answered")
    assert (at_b["verdict"], at_b["model"], at_b["strength"]) == ("not_watermarked", None, None)
    # the line's receipt is B's, about this text, and verifies offline against B's key set
    payload = verify_receipt(at_b["receipt"], _jwks(b)).payload
    assert payload["issuer"] == "Org B" and payload["text"] == {"sha256": text_sha256(text)}
    assert payload["models"] == ["B model"]
    with pytest.raises(Exception, match="signature"):
        verify_receipt(at_b["receipt"], _jwks(a))
    from detector.cli.main import main

    (tmp_path / "r.jws").write_text(at_b["receipt"])
    (tmp_path / "jwks.json").write_text(json.dumps(_jwks(b)))
    (tmp_path / "t.txt").write_bytes(text.encode())
    args = ["verify", str(tmp_path / "r.jws"), "--jwks", str(tmp_path / "jwks.json")]
    assert main([*args, "--text", str(tmp_path / "t.txt")]) == 0
    # a closed port and a peer that never answers: unreachable, within the deadline
    assert lines[pair["dead"]]["status"] == lines[pair["hole"]]["status"] == "unreachable"
    assert lines[pair["hole"]]["verdict"] is None and lines[pair["hole"]]["receipt"] is None
    assert TIMEOUT_S - 0.5 < elapsed < TIMEOUT_S + 4.0
    # four organizations asked: A's claim stands once corrected, one power of ten weaker
    combined = answer["combined"]
    assert (combined["verdict"], combined["organizations"]) == ("watermarked", 4)
    strength = answer["strength"]
    assert combined["supported"] == [
        {"organization": "Org A", "model": "A model", "strength": strength + 1}
    ]


@pytest.mark.slow
def test_the_reverse_b_marks_its_own_text_and_a_answers_b_through_its_partner_key(pair):
    a, b = pair["a"], pair["b"]
    text = _marked(KEY_B, 22)
    answer, elapsed = _check(b, text)
    _validate(answer)
    assert (answer["verdict"], answer["model"]) == ("watermarked", "B model")
    (at_a,) = answer["peers"]
    assert (at_a["organization"], at_a["status"], at_a["verdict"]) == (
        "Org A",
        "answered",
        "not_watermarked",
    )
    assert verify_receipt(at_a["receipt"], _jwks(a)).payload["issuer"] == "Org A"
    assert answer["combined"]["organizations"] == 2
    assert answer["combined"]["supported"][0]["organization"] == "Org B"
    assert elapsed < TIMEOUT_S  # nothing unreachable here: no waiting out a deadline


@pytest.mark.slow
def test_without_peers_the_answer_is_the_local_one_alone(pair):
    text = _marked(KEY_A, 21)
    answer, elapsed = _check(pair["a"], text, peers=False)
    assert set(answer) == {"verdict", "model", "strength", "tokens_scored", "receipt"}
    assert elapsed < TIMEOUT_S - 1


@pytest.mark.slow
def test_a_peers_answer_never_changes_the_local_verdict(pair):
    # the text marked under B, asked of A: A's own fields say what A alone says
    text = _marked(KEY_B, 23)
    alone, _ = _check(pair["a"], text, peers=False)
    answer, _ = _check(pair["a"], text, key=pair["partner_key"])
    receipt = alone.pop("receipt")
    assert {k: answer[k] for k in alone} == alone  # the same answer, in a receipt of its own
    assert _decision(answer["receipt"], pair["a"]) == _decision(receipt, pair["a"])
    assert answer["verdict"] == "not_watermarked"
    assert answer["peers"][0]["verdict"] == "watermarked"
    combined = answer["combined"]
    assert combined["verdict"] == "watermarked"
    assert [c["organization"] for c in combined["supported"]] == ["Org B"]


# --- a fake peer, in this process: what a peer is sent, and receipts that must not pass ---


def _ask(text: str, address: str = "203.0.113.7") -> dict[str, Any]:
    """A partner's check (only a partner's makes this server solve a peer's proof of work)."""
    partner, _ = services.partner_create(name=f"partner at {address}")
    return services.verify(caller=services.Caller(address=address, partner=partner), text=text)


def _ask_anonymously(text: str, address: str = "203.0.113.7") -> dict[str, Any]:
    from provenance.public.proof_of_work import challenge_create

    proof = solve(challenge_create())
    return services.verify(caller=services.Caller(address=address, proof=proof), text=text)


def test_an_anonymous_check_asks_no_peer_whose_proof_of_work_this_server_would_solve(
    published, fake, wm_text
):
    fake.trust()
    answer = _ask_anonymously(wm_text)
    _validate(answer)
    assert fake.requests == []
    (line,) = answer["peers"]
    assert (line["status"], line["verdict"], line["receipt"]) == ("not_asked", None, None)
    assert answer["combined"]["organizations"] == 2  # still counted as asked: conservative


def test_a_peer_with_a_partner_key_is_asked_for_an_anonymous_check(
    published, fake, wm_text, settings
):
    fake.trust()
    settings.PROVENANCE_PUBLIC_PEER_KEYS = {settings.PROVENANCE_PUBLIC_PEERS[0]: "pvp_test"}
    (line,) = _ask_anonymously(wm_text)["peers"]
    assert line["status"] == "answered"
    (posted,) = [r for r in fake.requests if "body" in r]
    assert posted["pow"] is False


def test_a_text_too_short_to_test_asks_no_peer(published, fake):
    fake.trust()
    with pytest.raises(TooShort):
        _ask("Too short to test.")
    assert fake.requests == []


def test_a_peer_is_sent_the_text_alone_with_its_proof_of_work_solved(published, fake, wm_text):
    answer = _ask(wm_text)
    (posted,) = [r for r in fake.requests if "body" in r]
    assert posted["body"] == {"text": wm_text, "peers": False}
    assert posted["pow"] is True
    sent = json.dumps(fake.requests)
    assert "203.0.113.7" not in sent and "Authorization" not in sent and "Cookie" not in sent
    assert answer["model"] == PUBLIC_NAME  # the local fields are the local answer's


def test_a_receipt_that_does_not_verify_against_the_peers_key_set_is_invalid(
    published, fake, wm_text
):
    (line,) = _ask(wm_text)["peers"]
    assert line["status"] == "receipt_invalid"
    assert line["verdict"] is None and line["receipt"] is None


def test_a_receipt_about_another_text_is_invalid(published, fake, wm_text):
    fake.trust()
    fake.receipt_text = "another text altogether"
    (line,) = _ask(wm_text)["peers"]
    assert line["status"] == "receipt_invalid"


def test_a_valid_peer_receipt_gives_a_line_and_a_combined_claim(published, fake, wm_text, settings):
    fake.trust()
    answer = _ask(wm_text)
    _validate(answer)
    (line,) = answer["peers"]
    assert (line["status"], line["verdict"], line["model"]) == (
        "answered",
        "watermarked",
        "Fake model",
    )
    organizations = [c["organization"] for c in answer["combined"]["supported"]]
    assert "Fake" in organizations
    # the library's combined claim, computed again from the answer's own fields
    local = {"organization": settings.PROVENANCE_PUBLIC_ORGANIZATION, "status": "answered"}
    local |= {k: answer[k] for k in ("verdict", "model", "strength")}
    again = combine([local, *answer["peers"]], settings.PROVENANCE_THRESHOLD)
    assert answer["combined"] == again


def test_a_document_pointing_elsewhere_is_not_followed(published, fake, wm_text):
    elsewhere = f"http://127.0.0.1:{free_port()}/verify"
    fake.endpoint = elsewhere
    (line,) = _ask(wm_text)["peers"]
    assert line["status"] == "unreachable"
    assert not any(r["path"] == "/verify" for r in fake.requests)
