# ruff: noqa: F811  (the public tests' fixtures, imported by name)
"""Public budgets that one actor cannot spend for everyone.

Before, an anonymous check spent its address's budget and the global one before its body
was read, and nothing sat between the two: 60 IPv6 /64s of one /58 (10 checks each, empty
texts) spent the global budget and every other anonymous caller got 429 for a minute; and a
6to4 host holds 65,536 /64s of its own. Here: the body is judged before anything beyond the
address is spent, each prefix (an IPv4 /24; an IPv6 /56 and /48) spends at most its share of
the level above, 6to4 and Teredo count as their IPv4 host, and a flood that does reach the
global budget makes the proof of work dearer, for the flooder's own stockpiled challenges
too. Partners keep their own budget. Scaled by ten (a global budget of 60 a minute), as the
finding's 600."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from provenance.public import services
from tests.provenance.public.conftest import (  # noqa: F401  (fixtures, found by name)
    VERIFY,
    _small_proof_of_work,
    anon,
    check,
    published,
    solve,
)

pytestmark = pytest.mark.django_db
BASE = 2000  # the proof of work's largest number in these tests (_small_proof_of_work)


PADDING = "walked along the quiet river at dawn while the herons watched the water move slowly past"


def _text(label: str) -> str:
    """A text of the public minimum (14 words), told apart by ``label``."""
    return f"{label} {PADDING}"


@pytest.fixture
def scaled(settings):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 10
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 60


def _slash_58(i: int) -> str:
    """An address in the i-th /64 of 2001:db8:0:40::/58 (64 of them)."""
    return f"2001:db8:0:{0x40 + i:x}::{i + 1:x}"


def test_empty_bodies_from_a_slash_58_spend_nothing_beyond_each_address(published, check, scaled):
    codes = [check("", REMOTE_ADDR=_slash_58(i)).status_code for i in range(6) for _ in range(10)]
    assert codes == [400] * 60  # each /64's own ten
    assert check("", REMOTE_ADDR=_slash_58(0)).status_code == 429  # its address's budget
    assert check(_text("a text from elsewhere"), REMOTE_ADDR="198.51.100.4").status_code == 200


def test_a_slash_58_flood_spends_at_most_its_prefixes_share(published, check, scaled):
    codes = [
        check(_text(f"text {i} {j}"), REMOTE_ADDR=_slash_58(i)).status_code
        for i in range(6)
        for j in range(10)
    ]
    assert codes.count(200) == 10 and codes.count(429) == 50  # the /56's share
    assert check(_text("a text from elsewhere"), REMOTE_ADDR="198.51.100.4").status_code == 200
    assert check(_text("another /48"), REMOTE_ADDR="2001:db8:1::1").status_code == 200


def test_one_ipv4_slash_24_spends_at_most_its_share(published, check, scaled):
    codes = [
        check(_text(f"text {i}"), REMOTE_ADDR=f"192.0.2.{i + 1}").status_code for i in range(12)
    ]
    assert codes.count(200) == 10 and codes[-2:] == [429, 429]
    assert check(_text("a text from elsewhere"), REMOTE_ADDR="198.51.100.4").status_code == 200


def test_6to4_and_teredo_addresses_spend_their_ipv4_hosts_budget(published, check, settings):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 3
    codes = [
        check(_text(f"text {i}"), REMOTE_ADDR=address).status_code
        for i, address in enumerate(
            [
                "192.0.2.7",
                "2002:c000:207:1::1",  # 6to4 of 192.0.2.7, one /64 ...
                "2002:c000:207:2::1",  # ... and another
                "2001:0:4136:e378:8000:63bf:3fff:fdf8",  # Teredo, client 192.0.2.7
            ]
        )
    ]
    assert codes == [200, 200, 200, 429]
    assert check(_text("text"), REMOTE_ADDR="2002:c000:208:1::1").status_code == 200  # 192.0.2.8


def test_a_partner_is_answered_when_the_anonymous_budget_is_spent(published, check, settings):
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 4
    codes = [check(_text(f"text {i}"), REMOTE_ADDR=f"198.51.{i}.1").status_code for i in range(5)]
    assert codes == [200, 200, 200, 200, 429]
    _, key = services.partner_create(name="newsroom")
    partner = APIClient()
    partner.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    answer = partner.post(
        VERIFY, {"text": _text("a partner's text")}, format="json", REMOTE_ADDR="198.51.0.1"
    )
    assert answer.status_code == 200


def _challenge(client: APIClient) -> dict[str, Any]:
    return client.get("/api/public/v1/challenge").json()


def test_the_proof_of_work_grows_dearer_under_a_flood(published, check, anon, settings):
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 20
    quiet = _challenge(anon)
    assert quiet["maxNumber"] == BASE
    stockpiled = solve(quiet)  # solved while it was cheap, kept for the flood
    codes = [check(_text(f"text {i}"), REMOTE_ADDR=f"198.51.{i}.1").status_code for i in range(20)]
    assert codes == [200] * 20  # the global budget, spent by 20 /24s
    flood = _challenge(anon)["maxNumber"]
    assert flood >= 16 * BASE  # a caller now tries at least 16 times the hashes
    late = anon.post(
        VERIFY,
        {"text": _text("a text")},
        format="json",
        HTTP_X_PROVENANCE_POW=stockpiled,
        REMOTE_ADDR="203.0.113.50",
    )
    assert late.status_code == 403  # a challenge issued before the flood no longer pays
    assert late.json()["challenge"]["maxNumber"] >= 16 * BASE
