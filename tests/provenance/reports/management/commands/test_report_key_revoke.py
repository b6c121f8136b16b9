"""``manage.py report_key_revoke KID``: the key leaves the JWKS, named as revoked; an unknown
kid is a command error; revoking the active key starts a new one."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from provenance.reports.management.commands import report_key_revoke
from provenance.reports.models import SigningKey
from provenance.reports.selectors import jwks
from provenance.reports.services import signing_key_active

pytestmark = pytest.mark.django_db


def test_revoking_the_active_key_drops_it_and_starts_another():
    leaked = signing_key_active()
    out = io.StringIO()
    call_command(report_key_revoke.Command(), "--", leaked.kid, stdout=out)
    assert out.getvalue().strip() == f"revoked report-signing key {leaked.kid}; it left the JWKS"
    got = jwks()
    assert got["revoked"] == [leaked.kid] and leaked.kid not in [k["kid"] for k in got["keys"]]
    assert signing_key_active().kid != leaked.kid and len(got["keys"]) == 1


def test_an_unknown_kid_is_a_command_error():
    with pytest.raises(CommandError, match="no signing key 'nope'"):
        call_command(report_key_revoke.Command(), "nope")


def test_a_kid_that_begins_with_a_dash_is_revoked_after_a_double_dash():
    """A thumbprint is base64url: one kid in 64 begins with '-', which argparse would
    otherwise read as an option (this one as no option of the command's; "-h..." would be
    read as --help)."""
    active = signing_key_active()
    dashed = "-Xq" + active.kid[3:]
    SigningKey.objects.filter(pk=active.pk).update(kid=dashed)
    with pytest.raises(CommandError, match="required: kid"):
        call_command(report_key_revoke.Command(), dashed)
    assert jwks()["revoked"] == []
    out = io.StringIO()
    call_command(report_key_revoke.Command(), "--", dashed, stdout=out)
    assert out.getvalue().startswith(f"revoked report-signing key {dashed};")
    assert jwks()["revoked"] == [dashed]


def test_the_kid_is_required():
    with pytest.raises(CommandError):
        call_command("report_key_revoke")
