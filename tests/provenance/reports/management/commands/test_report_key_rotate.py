"""``manage.py report_key_rotate``: a new signing key; the old one retires, still published."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from provenance.reports.management.commands import report_key_rotate
from provenance.reports.selectors import jwks
from provenance.reports.services import signing_key_active

pytestmark = pytest.mark.django_db


def test_rotating_retires_the_active_key_and_starts_a_new_one():
    old = signing_key_active()
    out = io.StringIO()
    call_command(report_key_rotate.Command(), stdout=out)
    new = signing_key_active()
    assert new.kid != old.kid
    assert out.getvalue().strip() == (
        f"new report-signing key {new.kid}; earlier keys stay in the JWKS"
    )
    got = jwks()
    assert [k["kid"] for k in got["keys"]] == [old.kid, new.kid] and got["retired"] == [old.kid]
