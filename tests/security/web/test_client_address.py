"""A client's own X-Forwarded-For does not buy it a fresh address: public budgets (and every
throttle keyed by address) count REMOTE_ADDR unless the deployment names its own proxies
(``PROVENANCE_TRUSTED_PROXIES``), and then only the address those proxies appended
(``provenance.lib.identity``; tests/security/web/test_one_identity.py tries the same through
the deployments' proxies for the sign-in lockouts)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from provenance.keys.services import key_publish
from tests.provenance.public.conftest import VERIFY, solve
from tests.provenance.watermark import HUMAN_TEXT


@pytest.fixture
def anonymous(alice_key, settings):
    key_publish(key=alice_key, public_name="Acme Assistant")
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 2
    client = APIClient()

    def verify(text: str, forwarded: str) -> int:
        proof = solve(client.get("/api/public/v1/challenge").json())
        return client.post(
            VERIFY,
            {"text": text},
            format="json",
            HTTP_X_PROVENANCE_POW=proof,
            HTTP_X_FORWARDED_FOR=forwarded,
        ).status_code

    return verify


def test_a_forged_forwarded_for_does_not_escape_the_address_budget(anonymous):
    codes = [anonymous(f"{HUMAN_TEXT} ({i})", f"203.0.113.{i}") for i in range(4)]
    assert codes == [200, 200, 429, 429]


def test_behind_a_named_proxy_the_address_it_appended_is_counted(anonymous, settings):
    settings.PROVENANCE_TRUSTED_PROXIES = 1
    # The client wrote the first hop; the deployment's proxy appended the second.
    first = [anonymous(f"{HUMAN_TEXT} (a {i})", f"198.51.100.7, 203.0.113.{1}") for i in range(3)]
    other = [anonymous(f"{HUMAN_TEXT} (b {i})", f"198.51.100.7, 203.0.113.{2}") for i in range(2)]
    assert first == [200, 200, 429] and other == [200, 200]
