"""A leaked report-signing key can be revoked: it leaves the JWKS, which names it revoked
(a retired key stays published and named retired), and ``python -m detector verify`` says
that the report was signed with a revoked key."""

from __future__ import annotations

import base64
import json

import pytest
from django.core.management import call_command

from detector.cli.main import main as detector_main
from detector.reports.signed import ReportError, verify
from provenance.reports.models import SigningKey

pytestmark = pytest.mark.django_db


def _report(client, wm_text) -> str:
    response = client.post("/api/v1/checks?wait=5", {"text": wm_text}, format="json")
    return client.get(f"/api/v1/checks/{response.json()['id']}/report").content.decode()


def test_a_revoked_key_leaves_the_jwks_and_verify_says_so(
    api_for, alice_key, wm_text, tmp_path, capsys
):
    alice = api_for("alice")
    leaked = _report(alice, wm_text)
    kid = SigningKey.objects.get().kid
    call_command("report_key_rotate")
    retired_report = _report(alice, wm_text)  # signed by the new key, retired next
    call_command("report_key_rotate")
    retired = SigningKey.objects.order_by("created_at", "id")[1].kid
    call_command("report_key_revoke", "--", kid)
    jwks = alice.get("/.well-known/jwks.json").json()
    assert kid not in [key["kid"] for key in jwks["keys"]] and jwks["revoked"] == [kid]
    assert retired in jwks["retired"] and retired in [key["kid"] for key in jwks["keys"]]
    assert verify(retired_report, jwks).kid == retired  # retired: still verifies
    with pytest.raises(ReportError, match=f"signed with key {kid}, which its issuer revoked"):
        verify(leaked, jwks)
    (tmp_path / "report.jws").write_text(leaked)
    (tmp_path / "jwks.json").write_text(json.dumps(jwks))
    code = detector_main(
        ["verify", str(tmp_path / "report.jws"), "--jwks", str(tmp_path / "jwks.json")]
    )
    assert code == 1 and "revoked" in capsys.readouterr().err


def test_revoking_the_active_key_starts_a_new_one(api_for, alice_key, wm_text):
    alice = api_for("alice")
    _report(alice, wm_text)
    kid = SigningKey.objects.get().kid
    call_command("report_key_revoke", "--", kid)
    fresh = _report(alice, wm_text)
    assert verify(fresh, alice.get("/.well-known/jwks.json").json()).kid != kid


def test_a_report_without_a_kid_is_refused():
    """A report whose protected header names no key would verify against the one key of a
    verifier's set without the revoked list ever being read: refused, whatever the set."""
    from joserfc import jws

    from detector.reports.signed import ALGORITHM, SCHEMA, TYP, canonical_json, generate_signing_key

    key = generate_signing_key()
    public = key.as_dict(private=False)
    payload = canonical_json({"schema": SCHEMA, "text": {"sha256": "0" * 64}})
    no_kid = jws.serialize_compact({"alg": ALGORITHM, "typ": TYP}, payload, key, [ALGORITHM])
    revoked = {"keys": [public], "revoked": [key.kid]}
    with pytest.raises(ReportError, match="names no signing key"):
        verify(no_kid, revoked)
    with pytest.raises(ReportError, match="names no signing key"):
        verify(no_kid, {"keys": [public]})
    header = json.dumps({"alg": ALGORITHM, "typ": TYP, "kid": [key.kid]}).encode()
    odd_kid = base64.urlsafe_b64encode(header).rstrip(b"=").decode() + no_kid[no_kid.index(".") :]
    with pytest.raises(ReportError, match="names no signing key"):
        verify(odd_kid, revoked)
