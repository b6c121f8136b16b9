"""The published key set (active and retired keys, revoked ones named only) and the tier a
report is signed at."""

from __future__ import annotations

import pytest

from provenance.reports.selectors import jwks, report_tier
from provenance.reports.services import signing_key_revoke, signing_key_rotate
from tests.provenance.reports.reports_data import scored_check

pytestmark = pytest.mark.django_db


def test_the_key_set_publishes_active_and_retired_keys_and_names_revoked_ones():
    old = signing_key_rotate()
    leaked = signing_key_rotate()
    active = signing_key_rotate()
    signing_key_revoke(leaked.kid)
    got = jwks()
    assert [k["kid"] for k in got["keys"]] == [old.kid, active.kid]
    assert got["retired"] == [old.kid] and got["revoked"] == [leaked.kid]
    assert all("d" not in k for k in got["keys"])  # public halves only


def test_an_empty_registry_publishes_no_key():
    assert jwks() == {"keys": [], "retired": [], "revoked": []}


def test_a_report_is_signed_at_the_callers_tier_for_its_own_keys(api_for, cast, alice_key, wm_text):
    from provenance.checks.models import Check

    check = Check.objects.get(id=scored_check(api_for("alice"), wm_text))
    assert report_tier(cast["alice"], check) == "auditor"
    assert report_tier(cast["charlie"], check) == "basic"  # another team's key: coarse only
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    assert report_tier(cast["alice"], check) == "basic"


def test_the_active_signing_key_follows_every_change_to_its_rows():
    """Read through the per-process row cache: a rotation or revocation made anywhere (here a
    bare update, no service) is seen by the next signature, never a stale key."""
    from django.utils import timezone

    from provenance.reports.models import SigningKey
    from provenance.reports.services import signing_key_active

    first = signing_key_active()
    assert signing_key_active().kid == first.kid
    SigningKey.objects.filter(id=first.id).update(retired_at=timezone.now())
    second = signing_key_active()
    assert second.kid != first.kid
    newer = signing_key_rotate()
    assert signing_key_active().kid == newer.kid
    signing_key_revoke(newer.kid)  # revoking the active key starts a new one
    assert signing_key_active().kid not in {first.kid, second.kid, newer.kid}
