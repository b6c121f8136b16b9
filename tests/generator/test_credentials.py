"""Content Credentials on replies: when a reply is signed, with what, and refusals of an
unusable certificate."""

from __future__ import annotations

import os

import pytest

from detector.credentials.certificates import development_certificate
from detector.credentials.manifest import key_id_of_soft_binding_value
from detector.credentials.reading import read_text
from generator.config import KeyOptions, KeyStore
from generator.credentials import CredentialsConfigError, ReplyCredentials


@pytest.fixture(scope="module")
def dev():
    return development_certificate("Acme")


def _files(tmp_path, dev, mode=0o600):
    cert, key = tmp_path / "c2pa.pem", tmp_path / "c2pa.key"
    cert.write_bytes(dev.credential.chain_pem)
    key.write_bytes(dev.credential.key_pem)
    os.chmod(key, mode)
    return str(cert), str(key)


def test_off_without_a_certificate_and_refused_when_asked_for_every_reply():
    assert ReplyCredentials.load(None, None, None).credential is None
    assert not ReplyCredentials().wanted(KeyOptions(True, "k"), True)
    with pytest.raises(CredentialsConfigError, match="needs a signing certificate"):
        ReplyCredentials.load(None, None, None, every_reply=True)


def test_a_key_readable_by_others_or_half_a_pair_is_refused(tmp_path, dev):
    cert, key = _files(tmp_path, dev, mode=0o644)
    with pytest.raises(CredentialsConfigError, match="chmod 600"):
        ReplyCredentials.load(cert, key, None)
    with pytest.raises(CredentialsConfigError, match="both"):
        ReplyCredentials.load(cert, None, None)
    other = development_certificate("Other")
    (tmp_path / "other.key").write_bytes(other.credential.key_pem)
    os.chmod(tmp_path / "other.key", 0o600)
    with pytest.raises(CredentialsConfigError, match="does not match"):
        ReplyCredentials.load(cert, str(tmp_path / "other.key"), None)


def test_which_replies_are_signed(tmp_path, dev):
    cert, key = _files(tmp_path, dev)
    some = ReplyCredentials.load(cert, key, None)
    assert some.organization == "Acme"  # the certificate's O=
    assert not some.wanted(KeyOptions(False, "k"), None)
    assert some.wanted(KeyOptions(True, "k"), None)  # the key's entry
    assert some.wanted(KeyOptions(False, "k"), True)  # the request
    assert not some.wanted(KeyOptions(False, "k"), "true")  # only a JSON true
    every = ReplyCredentials.load(cert, key, "Acme Labs", every_reply=True)
    assert every.wanted(KeyOptions(False, "k"), None) and every.organization == "Acme Labs"


def test_a_wrapper_signs_the_text_as_sent_with_the_keys_public_id(tmp_path, dev):
    cert, key = _files(tmp_path, dev)
    signer = ReplyCredentials.load(cert, key, None)
    store = KeyStore.from_mapping(
        {
            "team-a": {"key": 7, "content_credentials": True, "public_id": "acme-7"},
            "team-b": {"key": 8},
        }
    )
    assert store.options("team-b") == KeyOptions(False, "team-b")
    text = "Rain on the tin roof."
    signed = text + signer.wrapper(text, "smollm2", store.options("team-a"))
    credentials = read_text(signed, dev.ca_pem.decode())
    assert credentials.valid and credentials.trusted and credentials.model == "smollm2"
    assert key_id_of_soft_binding_value(credentials.soft_binding["value"]) == "acme-7"
    assert "7" not in credentials.soft_binding["value"].replace("acme-7", "")
