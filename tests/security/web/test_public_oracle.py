# ruff: noqa: F811  (the public tests' fixtures, imported by name)
"""The public oracle tried as a scrubber, a griefer and a flood would: the strength moves only
across wide bands; a variant hidden in fresh padding or sent in pieces is still counted in
its family; one requester's near-duplicates block nobody else; a body is refused on its
headers before it is read; peers are asked only after this server's own checks, never at
the cost of a peer's proof of work for an anonymous caller; an IPv6 /64 is one budget; a
revoked signing key's receipts leave the answer cache."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.test import RequestFactory
from rest_framework.test import APIClient

from detector.decision import combined
from detector.reports.receipt import verify_receipt
from detector.reports.signed import text_sha256
from detector.text.corpora import STDLIB, docstrings
from provenance.public import families, services
from provenance.public.families import VariantLimit, family_observe
from provenance.public.proof_of_work import challenge_create
from provenance.reports.services import signing_key_revoke
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.public.conftest import (  # noqa: F401  (fixtures, found by name)
    VERIFY,
    _small_proof_of_work,
    anon,
    check,
    fake,
    published,
    solve,
)
from tests.provenance.watermark import HUMAN_TEXT, watermarked_text

pytestmark = pytest.mark.django_db
BANDS = {-31, -13, -7, -3, -1}  # p < 1e-30, 1e-12, 1e-6, 1e-2, or only the verdict


@pytest.fixture
def partner_client():
    def make(name: str) -> Any:
        _, key = services.partner_create(name=name)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return client

    return make


# --- the strength: a few wide bands, not a gradient ---------------------------------------


def test_the_strength_is_one_of_a_few_wide_bands_in_the_answer_and_the_receipt(
    published, partner_client, client
):
    partner = partner_client("newsroom")
    jwks = client.get("/.well-known/jwks.json").json()
    strengths = []
    for tokens in (24, 40, 60, 90, 130, 180, 260):
        text = watermarked_text(KEY_VALUE, num_tokens=tokens, seed=tokens)
        body = partner.post(VERIFY, {"text": text}, format="json").json()
        if body["verdict"] != "watermarked":
            continue
        assert body["strength"] in BANDS
        assert verify_receipt(body["receipt"], jwks).payload["strength"] == body["strength"]
        strengths.append(body["strength"])
    assert len(strengths) >= 5  # texts of 24 to 260 tokens: a handful of bands, not 11 values
    assert len(set(strengths)) <= 3


def test_the_band_of_a_corrected_p_value():
    band = combined.strength_band
    assert [band(x) for x in (-1.5, -2.5, -5.9, -6.1, -11.0, -12.5, -29.0, -191.0)] == [
        -1,
        -3,
        -3,
        -7,
        -7,
        -13,
        -13,
        -31,
    ]


# --- the scrubbing guard against a padding scrubber and a splitting scrubber ---------------


def _human_pool() -> list[str]:
    texts = docstrings(STDLIB / "email") + docstrings(STDLIB / "json")
    return " ".join(texts).split()


def _edited(words: list[str], rng: random.Random) -> list[str]:
    out = list(words)
    out[rng.randrange(len(out))] = rng.choice(["zebra", "quartz", "lantern", "violet"])
    return out


def _padded(words: list[str], pool: list[str], rng: random.Random) -> str:
    """The variant inside fresh human text five times its length, half before, half after."""
    n = 5 * len(words)
    start = rng.randrange(len(pool) - n)
    fresh = pool[start : start + n]
    return " ".join(fresh[: n // 2] + words + fresh[n // 2 :])


def _observe(text: str, requester: str) -> bool:
    try:
        family_observe(text, text_sha256(text), requester)
    except VariantLimit:
        return False
    return True


@pytest.mark.parametrize("tokens", [60, 200])
def test_a_padding_scrubber_is_stopped_at_the_documented_number_of_variants(tokens, settings):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 20
    words = watermarked_text(KEY_VALUE, num_tokens=tokens, seed=7).split()
    pool, rng = _human_pool(), random.Random(tokens)
    answered = [_observe(_padded(_edited(words, rng), pool, rng), "address:x") for _ in range(40)]
    assert answered == [True] * 20 + [False] * 20


@pytest.mark.parametrize("tokens", [60, 120, 200])
def test_a_splitting_scrubber_is_stopped_within_the_documented_number_of_variants(tokens, settings):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 20
    words = watermarked_text(KEY_VALUE, num_tokens=tokens, seed=8).split()
    rng = random.Random(tokens)
    answered = []  # per variant: whether any of its pieces was answered
    for _ in range(40):  # each variant in three pieces, cut at new places each time
        variant = _edited(words, rng)
        low = min(30, len(variant) // 3)
        cuts = sorted(rng.sample(range(low, len(variant) - low), 2))
        pieces = [variant[a:b] for a, b in zip([0, *cuts], [*cuts, len(variant)], strict=True)]
        results = [_observe(" ".join(piece), "address:y") for piece in pieces if len(piece) >= 16]
        answered.append(any(results))
    assert answered[0] and sum(answered) <= 20 and not any(answered[20:])


def test_the_guard_through_the_api_stops_padded_variants(published, partner_client, settings):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 5
    partner = partner_client("scrubber")
    words = watermarked_text(KEY_VALUE, num_tokens=80, seed=9).split()
    pool, rng = _human_pool(), random.Random(9)
    codes = [
        partner.post(
            VERIFY, {"text": _padded(_edited(words, rng), pool, rng)}, format="json"
        ).status_code
        for _ in range(8)
    ]
    assert codes == [200] * 5 + [429] * 3


def test_unrelated_human_texts_are_not_taken_for_variants(settings):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 1
    vocabulary = sorted(set(_human_pool()))
    rng = random.Random(3)
    texts = [" ".join(rng.choices(vocabulary, k=rng.randrange(16, 400))) for _ in range(60)]
    assert all(_observe(t, "address:z") for t in texts)  # each its own family


# --- one requester cannot block a text for anyone else -----------------------------------


def _near_duplicates(text: str, count: int) -> list[str]:
    words = text.split()
    return [" ".join([*words[:i], "zebra", *words[i + 1 :]]) for i in range(count)]


def test_25_near_duplicates_from_one_address_block_no_one_else(
    published, partner_client, check, wm_text, settings
):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 20
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 100
    griefer = [check(v, REMOTE_ADDR="203.0.113.9") for v in _near_duplicates(wm_text, 25)]
    assert [r.status_code for r in griefer].count(429) == 5
    assert check(wm_text, REMOTE_ADDR="203.0.113.9").status_code == 429  # the griefer's own
    partner = partner_client("fact-checker")
    assert partner.post(VERIFY, {"text": wm_text}, format="json").status_code == 200
    assert check(wm_text, REMOTE_ADDR="198.51.100.4").status_code == 200  # another address


def test_25_near_duplicates_from_one_partner_block_no_other_partner(
    published, partner_client, wm_text, settings
):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 20
    griefer = partner_client("griefer")
    codes = [
        griefer.post(VERIFY, {"text": v}, format="json").status_code
        for v in _near_duplicates(wm_text, 25)
    ]
    assert codes.count(429) == 5
    other = partner_client("fact-checker")
    assert other.post(VERIFY, {"text": wm_text}, format="json").status_code == 200


# --- limits before parsing ------------------------------------------------------------------


class Recorded(io.RawIOBase):
    """A request body that counts what is read of it."""

    def __init__(self, data: bytes) -> None:
        self.data, self.read_bytes = io.BytesIO(data), 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self.data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        self.read_bytes += len(chunk)
        return len(chunk)


def _raw(content_type: str, length: int, body: bytes, **headers: str) -> tuple[int, int]:
    """(status, bytes of the body read) of a POST to the verify route through the whole
    WSGI stack, the body declared ``length`` long and ``body`` sent."""
    environ = RequestFactory()._base_environ(
        PATH_INFO=VERIFY,
        REQUEST_METHOD="POST",
        CONTENT_TYPE=content_type,
        CONTENT_LENGTH=str(length),
        **headers,
    )
    stream = Recorded(body)
    environ["wsgi.input"] = stream
    status: list[str] = []
    response = WSGIHandler()(environ, lambda s, h, *a: status.append(s))
    response.close()
    return int(status[0].split()[0]), stream.read_bytes


def test_an_oversized_anonymous_body_is_refused_before_it_is_read(published):
    status, read = _raw("application/json", 20 * 1024 * 1024, b'{"text": "')
    assert (status, read) == (413, 0)


def test_a_file_without_a_proof_of_work_in_the_header_is_not_read(published):
    status, read = _raw("multipart/form-data; boundary=x", 100_000, b"--x\r\n")
    assert (status, read) == (403, 0)


def test_a_body_of_another_media_type_is_refused_unread(published):
    status, read = _raw("text/plain", 100, b"hello")
    assert (status, read) == (415, 0)


def test_a_file_over_the_budget_is_not_read(published, settings):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 1
    form = "multipart/form-data; boundary=x"
    _raw(form, 5, b"--x--", HTTP_X_PROVENANCE_POW=solve(challenge_create()))  # the budget
    status, read = _raw(form, 100_000, b"--x\r\n", HTTP_X_PROVENANCE_POW=solve(challenge_create()))
    assert (status, read) == (429, 0)


def test_unknown_fields_are_refused(published, anon):
    proof = solve(anon.get("/api/public/v1/challenge").json())
    refused = anon.post(
        VERIFY, {"text": "t", "key_ids": [1]}, format="json", HTTP_X_PROVENANCE_POW=proof
    )
    assert refused.status_code == 400 and "key_ids" in refused.json()["detail"]


# --- peers only after our own checks, never a peer's proof of work for an anonymous caller


def test_an_anonymous_check_makes_no_peer_solve_and_no_peer_request(
    published, fake, check, wm_text
):
    fake.trust()
    answer = check(wm_text).json()
    assert fake.requests == []
    assert [line["status"] for line in answer["peers"]] == ["not_asked"]


def test_a_check_that_fails_our_own_checks_makes_no_peer_request(
    published, fake, anon, partner_client, wm_text, settings
):
    fake.trust()
    assert anon.post(VERIFY, {"text": wm_text}, format="json").status_code == 403  # no proof
    partner = partner_client("short")
    assert partner.post(VERIFY, {"text": "Too short."}, format="json").status_code == 400
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 1
    partner.post(VERIFY, {"text": wm_text + " one"}, format="json")
    before = len(fake.requests)
    assert partner.post(VERIFY, {"text": wm_text + " two"}, format="json").status_code == 429
    assert len(fake.requests) == before
    assert not any("body" in r and r["body"]["text"] == "Too short." for r in fake.requests)


# --- budgets by IPv6 /64 ---------------------------------------------------------------------


def test_an_ipv6_slash_64_is_one_budget(published, check, settings):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 2
    codes = [
        check(f"{HUMAN_TEXT} ({i})", REMOTE_ADDR=f"2001:db8:1:2::{i + 1:x}").status_code
        for i in range(3)
    ]
    assert codes == [200, 200, 429]
    assert check(f"{HUMAN_TEXT} (v6)", REMOTE_ADDR="2001:db8:1:3::1").status_code == 200
    assert check(f"{HUMAN_TEXT} (v4)", REMOTE_ADDR="192.0.2.1").status_code == 200


# --- a revoked signing key's answers leave the cache ------------------------------------------


def test_a_revoked_signing_keys_receipt_is_not_served_from_the_cache(published, check, client):
    text = watermarked_text(KEY_VALUE, num_tokens=120, seed=5)
    first = check(text).json()["receipt"]
    kid = verify_receipt(first, client.get("/.well-known/jwks.json").json()).kid
    signing_key_revoke(kid)
    again = check(text).json()["receipt"]
    assert verify_receipt(again, client.get("/.well-known/jwks.json").json()).kid != kid


def test_fingerprints_keep_every_shingle():
    text = watermarked_text(KEY_VALUE, num_tokens=200, seed=3)
    kept = families.fingerprints(text)
    assert len(kept) == len(families.shingles(text))
