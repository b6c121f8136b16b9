"""Signing a text's Content Credentials: the wrapper, the hard binding, the credential."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import unicodedata

import c2pa
import c2pa_text
import pytest

from detector.credentials.certificates import development_certificate
from detector.credentials.manifest import (
    SOFT_BINDING_ALG,
    CredentialError,
)
from detector.credentials.reading import read_store, read_text, strip_wrapper
from detector.credentials.signing import (
    SigningCredential,
    _sign_data_hashed,
    sign_sidecar,
)
from tests.detector.credentials.conftest import GENERATION, TEXT


def test_the_visible_text_is_the_nfc_text_and_the_wrapper_strips_off(signed):
    assert signed.startswith(unicodedata.normalize("NFC", TEXT))
    assert strip_wrapper(signed) == unicodedata.normalize("NFC", TEXT)
    assert strip_wrapper(TEXT) == TEXT
    assert "\ufeff" not in strip_wrapper(signed)


def test_an_independent_check_of_the_wrapper_and_the_hard_binding(signed):
    """c2pa-text's validator reads the wrapper; the data hash is recomputed here by hand
    from the text's bytes less the exclusion, and equals the one the manifest signs."""
    assert c2pa_text.validate_text(signed).valid
    store, start, length = c2pa_text.find_wrapper_info(signed)
    data = signed.encode()
    assert start + length == len(data)
    reader = c2pa.Reader("text/plain", io.BytesIO(data), store)
    detailed = json.loads(reader.detailed_json())
    data_hash = detailed["manifests"][detailed["active_manifest"]]["assertion_store"][
        "c2pa.hash.data"
    ]
    assert data_hash["exclusions"] == [{"start": start, "length": length}]
    expected = hashlib.sha256(data[:start] + data[start + length :]).digest()
    assert base64.b64decode(data_hash["hash"]) == expected


def test_an_exclusion_that_hides_visible_text_is_refused(dev):
    """A manifest whose hard binding leaves out more than its own wrapper (here: the whole
    text, so any text would match its hash) is refused, though the SDK's hash matches."""
    body = "Any words at all could stand here."
    data = body.encode()
    size = 0

    def exclusion_for(placeholder_size):
        nonlocal size
        size = c2pa_text.worst_case_wrapper_byte_length(placeholder_size)
        return (0, len(data) + size)

    store, _ = _sign_data_hashed(
        GENERATION.definition("x.txt", "text/plain"),
        dev.credential,
        exclusion_for,
        lambda _exclusion: hashlib.sha256(b"").digest(),
    )
    forged = body + c2pa_text.encode_wrapper_padded(store, size)
    credentials = read_text(forged, dev.ca_pem.decode())
    assert not credentials.valid
    assert any("wrapper's place" in reason for reason in credentials.reasons)


def test_a_sidecar_binds_the_whole_asset(dev):
    asset = TEXT.encode()
    store = sign_sidecar(asset, "text/plain", dev.credential, GENERATION)
    good = read_store(store, asset, "text/plain", dev.ca_pem.decode())
    assert good.valid and good.trusted and good.soft_binding["alg"] == SOFT_BINDING_ALG
    bad = read_store(store, asset.replace(b"river", b"rover"), "text/plain")
    assert not bad.valid


def test_the_credential_never_shows_its_key(dev):
    text = repr(dev.credential) + str(dev.credential)
    assert "PRIVATE" not in text and dev.credential.key_pem.decode()[40:80] not in text


def test_a_key_that_is_not_the_certificates_is_refused(dev):
    other = development_certificate("Other")
    with pytest.raises(CredentialError, match="does not match"):
        SigningCredential.from_pem(dev.credential.chain_pem, other.credential.key_pem)
    with pytest.raises(CredentialError, match="unreadable"):
        SigningCredential.from_pem(b"not a pem", b"nor this")
