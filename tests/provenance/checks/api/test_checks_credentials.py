"""Content Credentials read on every check: a signed reply's credential is shown valid
beside the watermark verdict, on the API, the page, /detect and the signed report; one word
changed breaks the credential and the watermark still speaks; the wrapper is never scored."""

from __future__ import annotations

import base64
import json

import pytest

from detector.credentials.certificates import development_certificate
from detector.credentials.manifest import SOFT_BINDING_ALG, Generation
from detector.credentials.signing import sign_text


@pytest.fixture(scope="module")
def dev():
    return development_certificate("Acme")


@pytest.fixture
def signed(dev, wm_text):
    return sign_text(wm_text, dev.credential, Generation("SmolLM2", "Acme", "pk-acme"))


@pytest.fixture
def alice(api_for, alice_key):
    return api_for("alice")


def _check(client, text):
    response = client.post("/api/v1/checks?wait=10", {"text": text}, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


def test_a_signed_reply_shows_a_valid_credential_beside_the_verdict(alice, signed, wm_text):
    body = _check(alice, signed)
    credentials = body["content_credentials"]
    assert credentials["present"] and credentials["valid"]
    assert credentials["trusted"] is None  # no trust list configured: not evaluated
    assert credentials["signer"] == "Acme development C2PA signer"
    assert credentials["model"] == "SmolLM2" and credentials["organization"] == "Acme"
    assert credentials["soft_binding"]["alg"] == SOFT_BINDING_ALG
    assert credentials["claim_generator"].startswith("Provenance")
    assert body["verdict"] == "watermarked"
    plain = _check(alice, wm_text)  # the wrapper's characters are never scored
    assert plain["num_tokens"] == body["num_tokens"] and plain["log10_p"] == body["log10_p"]
    assert plain["content_credentials"]["present"] is False


def test_one_word_changed_breaks_the_credential_and_the_watermark_still_speaks(alice, signed):
    words = signed.split(" ")
    words[5] = "zebra"
    body = _check(alice, " ".join(words))
    assert body["content_credentials"]["present"] and not body["content_credentials"]["valid"]
    assert any("dataHash" in r for r in body["content_credentials"]["reasons"])
    assert body["verdict"] == "watermarked"


def test_trust_follows_the_configured_anchors(alice, signed, dev, settings, tmp_path):
    anchors = tmp_path / "anchors.pem"
    anchors.write_bytes(dev.ca_pem)
    settings.PROVENANCE_C2PA_TRUST_ANCHORS = str(anchors)
    assert _check(alice, signed)["content_credentials"]["trusted"] is True
    other = tmp_path / "other.pem"
    other.write_bytes(development_certificate("Other").ca_pem)
    settings.PROVENANCE_C2PA_TRUST_ANCHORS = str(other)
    assert _check(alice, signed + " ")["content_credentials"]["trusted"] is False


def test_the_page_the_report_and_detect_say_the_same(alice, client, cast, signed):
    body = _check(alice, signed)
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{body['id']}/").content.decode()
    assert 'id="content-credentials" data-valid="true"' in page
    assert "Acme development C2PA signer" in page
    report = alice.get(f"/api/v1/checks/{body['id']}/report")
    assert report.status_code == 200
    payload = report.content.decode().split(".")[1]
    signed_payload = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert signed_payload["content_credentials"]["valid"] is True
    detect = alice.post("/detect", {"text": signed}, format="json").json()
    assert detect["content_credentials"]["valid"] is True
    assert detect["is_watermarked"] == (body["verdict"] == "watermarked")
