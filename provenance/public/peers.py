"""Interoperability between organizations: a public check also asks the peer verifiers the
operator lists (``PROVENANCE_PUBLIC_PEERS``: their discovery URLs; never a URL from the
request), each through its own public API, and checks each peer's receipt against that peer's
key set (docs/public.md, "Peer organizations").

A peer is sent the text and nothing else (``{"text": ..., "peers": false}``: the flag stops it
asking its own peers, so no loop and no amplification). A peer configured with a partner key
(``PROVENANCE_PUBLIC_PEER_KEYS``) is asked with it; any other's proof of work is solved here
with the ``altcha`` library, up to ``POW_MAX_NUMBER``, but only for a partner's check: an
anonymous check never makes this server work for it, so it asks only the peers with a
partner key, and the others' lines are "not_asked". Every peer is asked at once; the whole
fan-out ends at ``PROVENANCE_PUBLIC_PEER_TIMEOUT_S`` (connect: ``CONNECT_S``), and a peer that
has not answered by then is "unreachable". A line holds only what the peer's verified receipt
says; a receipt that does not verify, or that is about another text or issuer, or that
disagrees with the answer beside it, makes the line "receipt_invalid".
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import altcha
import httpx
from django.conf import settings
from django.core.cache import cache

from detector.reports.receipt import verify_receipt
from detector.reports.signed import ReportError, text_sha256

CONNECT_S = 2.0
CACHE_S = 300  # discovery documents, key sets and answered lines, per peer
MAX_BYTES = 1024 * 1024  # the most of a peer's document, key set or answer read
POW_MAX_NUMBER = 1_000_000  # a peer's challenge beyond this is not solved (seconds of CPU)
POW_CHUNK = 20_000  # numbers tried between two looks at the deadline
ANSWERED, UNREACHABLE, REFUSED, RECEIPT_INVALID, NOT_ASKED = (
    "answered",
    "unreachable",
    "refused",
    "receipt_invalid",
    "not_asked",
)
AGREED = ("verdict", "model", "strength", "tokens_scored")  # the answer and its receipt
USER_AGENT = "provenance-peer/1"


@dataclass(frozen=True)
class Peer:
    discovery: str
    key: str | None = field(default=None, repr=False)  # a partner key at the peer: secret


class PeerFailed(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def configured() -> list[Peer]:
    """The peers of the operator's configuration (settings; never the request)."""
    keys = settings.PROVENANCE_PUBLIC_PEER_KEYS
    urls = settings.PROVENANCE_PUBLIC_PEERS[: settings.PROVENANCE_PUBLIC_MAX_PEERS]
    return [Peer(url, keys.get(url)) for url in urls]


class Fanout:
    """The peers asked about one text, in threads; ``lines()`` waits until the deadline.
    ``asked``: which of ``peers`` to ask (the others' lines are "not_asked")."""

    def __init__(
        self, peers: list[Peer], text: str, asked: list[bool], requester: str = ""
    ) -> None:
        self.peers, self.asked = peers, asked
        self.deadline = time.monotonic() + settings.PROVENANCE_PUBLIC_PEER_TIMEOUT_S
        self.pool = concurrent.futures.ThreadPoolExecutor(max(1, sum(asked)), "peer")
        self.futures = {
            i: self.pool.submit(ask, peer, text, self.deadline, requester)
            for i, peer in enumerate(peers)
            if asked[i]
        }

    def lines(self) -> list[dict[str, Any]]:
        remaining = max(0.0, self.deadline - time.monotonic())
        concurrent.futures.wait(self.futures.values(), timeout=remaining)
        self.pool.shutdown(wait=False, cancel_futures=True)  # late ones end at their timeout
        out = []
        for i, peer in enumerate(self.peers):
            future = self.futures.get(i)
            if future is None:
                out.append(_line(peer, None, NOT_ASKED))
            elif future.done() and future.exception() is None:
                out.append(future.result())
            else:
                out.append(_line(peer, None, UNREACHABLE))
        return out


def ask_all(text: str, *, solve: bool, requester: str = "") -> Fanout:
    """Ask the configured peers about ``text`` for ``requester``: those with a partner key,
    and the others (their proof of work solved here) only when ``solve``."""
    peers = configured()
    return Fanout(peers, text, [solve or peer.key is not None for peer in peers], requester)


def ask(peer: Peer, text: str, deadline: float, requester: str = "") -> dict[str, Any]:
    """One peer's line for ``text``: its verified answer, or why there is none. An answered
    line is cached for the same requester only: the peer's receipt holds the time it was
    asked, which no other requester may learn."""
    digest = text_sha256(text)
    cache_key = f"public:peer:answer:{_hash(peer.discovery)}:{digest}:{requester}"
    cached = cache.get(cache_key)
    if cached is not None:
        return dict(cached)
    document: dict[str, Any] | None = None
    try:
        with httpx.Client(headers={"User-Agent": USER_AGENT}, follow_redirects=False) as client:
            document = _discovery(client, peer, deadline)
            answer = _verify(client, peer, document, text, deadline)
            payload = _checked(client, peer, document, answer, digest, deadline)
    except PeerFailed as failed:
        return _line(peer, document, failed.status)
    line = _line(peer, document, ANSWERED, payload, str(answer["receipt"]))
    cache.set(cache_key, line, CACHE_S)
    return line


def _line(
    peer: Peer,
    document: dict[str, Any] | None,
    status: str,
    payload: dict[str, Any] | None = None,
    receipt: str | None = None,
) -> dict[str, Any]:
    name = document["organization"]["name"] if document else urlsplit(peer.discovery).netloc
    payload = payload or {}
    return {
        "organization": name,
        "discovery": peer.discovery,
        "status": status,
        "verdict": payload.get("verdict"),
        "model": payload.get("model"),
        "strength": payload.get("strength"),
        "tokens_scored": payload.get("tokens_scored"),
        "receipt": receipt,
        "jwks_uri": document["jwks_uri"] if document else None,
    }


def _hash(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:32]


def _timeout(deadline: float) -> httpx.Timeout:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise PeerFailed(UNREACHABLE, "out of time")
    return httpx.Timeout(remaining, connect=min(CONNECT_S, remaining))


def _request(
    client: httpx.Client, method: str, url: str, deadline: float, **kwargs: Any
) -> tuple[int, Any]:
    """(status, JSON body) of one request, at most MAX_BYTES read (PeerFailed otherwise)."""
    try:
        with client.stream(method, url, timeout=_timeout(deadline), **kwargs) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BYTES or time.monotonic() > deadline:
                    raise PeerFailed(UNREACHABLE, "too large or too slow")
            status = response.status_code
    except httpx.HTTPError:
        raise PeerFailed(UNREACHABLE, "no connection") from None
    try:
        return status, json.loads(body)
    except ValueError:
        raise PeerFailed(UNREACHABLE, "not JSON") from None


def _same_origin(base: str, url: Any) -> str:
    """``url`` if it lies on ``base``'s origin (a peer's document cannot point elsewhere)."""
    if not isinstance(url, str):
        raise PeerFailed(UNREACHABLE, "a URL is missing")
    a, b = urlsplit(base), urlsplit(url)
    if (a.scheme, a.netloc) != (b.scheme, b.netloc):
        raise PeerFailed(UNREACHABLE, "a URL of the document leaves the peer's origin")
    return url


def _discovery(client: httpx.Client, peer: Peer, deadline: float) -> dict[str, Any]:
    cache_key = f"public:peer:discovery:{_hash(peer.discovery)}"
    document = cache.get(cache_key)
    if document is not None:
        return dict(document)
    status, body = _request(client, "GET", peer.discovery, deadline)
    try:
        ok = status == 200 and body["schema"] == "provenance.discovery/v1"
        name = body["organization"]["name"]
        verification = body["verification"]
    except (KeyError, TypeError):
        ok = False
    if not ok or not isinstance(name, str) or not name or not isinstance(verification, dict):
        raise PeerFailed(UNREACHABLE, "not a discovery document")
    document = {
        "organization": {"name": name[:200]},
        "endpoint": _same_origin(peer.discovery, verification.get("endpoint")),
        "challenge": _same_origin(peer.discovery, verification.get("challenge")),
        "jwks_uri": _same_origin(peer.discovery, body.get("jwks_uri")),
    }
    cache.set(cache_key, document, CACHE_S)
    return document


def _jwks(client: httpx.Client, peer: Peer, url: str, deadline: float, fresh: bool) -> Any:
    cache_key = f"public:peer:jwks:{_hash(peer.discovery)}"
    jwks = None if fresh else cache.get(cache_key)
    if jwks is None:
        status, jwks = _request(client, "GET", url, deadline)
        if status != 200 or not isinstance(jwks, dict):
            raise PeerFailed(UNREACHABLE, "no key set")
        cache.set(cache_key, jwks, CACHE_S)
    return jwks


def _verify(
    client: httpx.Client, peer: Peer, document: dict[str, Any], text: str, deadline: float
) -> dict[str, Any]:
    """The peer's answer to ``text`` (only the text is sent)."""
    headers = {}
    if peer.key is not None:
        headers["Authorization"] = f"Bearer {peer.key}"
    else:
        headers["X-Provenance-PoW"] = _solve(client, document["challenge"], deadline)
    body = {"text": text, "peers": False}
    status, answer = _request(
        client, "POST", document["endpoint"], deadline, json=body, headers=headers
    )
    if status != 200:
        raise PeerFailed(REFUSED, f"the peer answered {status}")
    if not isinstance(answer, dict) or not isinstance(answer.get("receipt"), str):
        raise PeerFailed(RECEIPT_INVALID, "no receipt")
    return answer


def _solve(client: httpx.Client, url: str, deadline: float) -> str:
    """A solved proof of work of the peer's (ALTCHA v1), in chunks between deadline checks."""
    status, made = _request(client, "GET", url, deadline)
    try:
        challenge = altcha.ChallengeV1(
            made["algorithm"], made["challenge"], made["maxNumber"], made["salt"], made["signature"]
        )
        top = int(challenge.max_number)
    except (KeyError, TypeError, ValueError):
        raise PeerFailed(UNREACHABLE, "not a challenge") from None
    if status != 200 or not 0 < top <= POW_MAX_NUMBER or challenge.algorithm != "SHA-256":
        raise PeerFailed(REFUSED, "a challenge this verifier does not solve")
    for start in range(0, top + 1, POW_CHUNK):
        if time.monotonic() > deadline:
            raise PeerFailed(UNREACHABLE, "out of time")
        found = altcha.solve_challenge_v1(
            challenge.challenge,
            challenge.salt,
            "SHA-256",
            min(top, start + POW_CHUNK - 1),
            start,
        )
        if found is not None:
            return altcha.PayloadV1(
                "SHA-256", challenge.challenge, found.number, challenge.salt, challenge.signature
            ).to_base64()
    raise PeerFailed(REFUSED, "the challenge has no solution")


def _checked(
    client: httpx.Client,
    peer: Peer,
    document: dict[str, Any],
    answer: dict[str, Any],
    digest: str,
    deadline: float,
) -> dict[str, Any]:
    """The payload of the peer's receipt, checked against its key set (fetched again once
    when the cached one fails: the peer may have rotated), the text and the answer."""
    for fresh in (False, True):
        jwks = _jwks(client, peer, document["jwks_uri"], deadline, fresh)
        try:
            payload = verify_receipt(answer["receipt"], jwks).payload
            break
        except (ReportError, ValueError, TypeError, KeyError):
            continue
    else:
        raise PeerFailed(RECEIPT_INVALID, "the receipt does not verify")
    agrees = all(answer.get(name) == payload[name] for name in AGREED)
    about = payload["text"] == {"sha256": digest}
    issuer = payload["issuer"] == document["organization"]["name"]
    if not (agrees and about and issuer):
        raise PeerFailed(RECEIPT_INVALID, "the receipt is not about this answer")
    return dict(payload)
