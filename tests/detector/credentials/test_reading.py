"""Reading a text's Content Credentials: valid, broken by any edit, trusted apart."""

from __future__ import annotations

from detector.credentials.certificates import development_certificate
from detector.credentials.manifest import (
    SOFT_BINDING_ALG,
    TRAINED_ALGORITHMIC_MEDIA,
    key_id_of_soft_binding_value,
)
from detector.credentials.reading import read_text, strip_wrapper
from detector.credentials.signing import (
    sign_text,
)
from tests.detector.credentials.conftest import GENERATION, TEXT


def test_a_signed_reply_reads_valid_with_what_it_says(dev, signed):
    credentials = read_text(signed, dev.ca_pem.decode())
    assert credentials.present and credentials.valid and credentials.trusted
    assert credentials.reasons == []
    assert credentials.model == "SmolLM2-135M-Instruct"
    assert credentials.organization == "Acme"
    assert credentials.signer == "Acme development C2PA signer"
    assert credentials.claim_generator.startswith("Provenance ")
    assert credentials.digital_source_type == TRAINED_ALGORITHMIC_MEDIA
    assert credentials.soft_binding == {"alg": SOFT_BINDING_ALG, "value": "azctZGVtbw=="}
    assert key_id_of_soft_binding_value(credentials.soft_binding["value"]) == "k7-demo"
    assert credentials.manifest_id.startswith("urn:c2pa:")
    assert credentials.created.endswith("Z")


def test_one_word_changed_breaks_the_credential(dev, signed):
    edited = signed.replace("stone", "stick", 1)
    credentials = read_text(edited, dev.ca_pem.decode())
    assert credentials.present and not credentials.valid
    assert any(reason.startswith("assertion.dataHash.mismatch") for reason in credentials.reasons)


def test_text_added_after_the_wrapper_breaks_the_credential(dev, signed):
    credentials = read_text(signed + " and more", dev.ca_pem.decode())
    assert not credentials.valid and credentials.reasons


def test_trust_is_reported_apart_from_validity(dev, signed):
    stranger = development_certificate("Someone else")
    untrusted = read_text(signed, stranger.ca_pem.decode())
    assert untrusted.valid and untrusted.trusted is False
    assert any(reason.startswith("signingCredential.untrusted") for reason in untrusted.reasons)
    unevaluated = read_text(signed)
    assert unevaluated.valid and unevaluated.trusted is None


def test_a_text_without_a_wrapper_has_no_credentials():
    assert read_text(TEXT).present is False


def test_a_corrupted_or_doubled_wrapper_is_present_and_invalid(dev, signed):
    truncated = signed[: len(TEXT) + 40]
    broken = read_text(truncated)
    assert broken.present and not broken.valid and broken.reasons
    doubled = signed + sign_text("another", dev.credential, GENERATION)
    twice = read_text(doubled)
    assert twice.present and not twice.valid
    assert any("multipleWrappers" in reason for reason in twice.reasons)
    assert "\ufeff" not in strip_wrapper(doubled)
