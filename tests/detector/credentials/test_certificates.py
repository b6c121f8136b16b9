"""The development certificate: a CA and a signer that C2PA validators accept."""

from __future__ import annotations

from cryptography import x509

from detector.credentials.certificates import development_certificate
from detector.credentials.manifest import Generation
from detector.credentials.reading import read_text
from detector.credentials.signing import sign_text


def test_the_signer_is_issued_by_the_ca_and_is_not_a_ca():
    dev = development_certificate("Acme")
    signer, ca = x509.load_pem_x509_certificates(dev.credential.chain_pem)
    assert signer.issuer == ca.subject != signer.subject
    assert signer.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert "untrusted" in ca.subject.rfc4514_string()
    assert dev.credential.alg == "es256"


def test_each_development_certificate_is_its_own_trust_anchor():
    first, second = development_certificate("Acme"), development_certificate("Acme")
    text = sign_text("hello there", first.credential, Generation("m", "Acme", "k"))
    assert read_text(text, first.ca_pem.decode()).trusted is True
    assert read_text(text, second.ca_pem.decode()).trusted is False
