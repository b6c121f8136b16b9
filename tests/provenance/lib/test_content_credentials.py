"""The organization's C2PA signing credential, from its files."""

from __future__ import annotations

import os

import pytest
from django.core.exceptions import ImproperlyConfigured

from detector.credentials.certificates import development_certificate
from provenance.lib import content_credentials


def test_none_without_a_certificate_and_half_a_pair_is_refused(settings, tmp_path):
    settings.PROVENANCE_C2PA_CERT = settings.PROVENANCE_C2PA_KEY = ""
    assert content_credentials.signing_credential() is None
    settings.PROVENANCE_C2PA_CERT = str(tmp_path / "only-the-cert.pem")
    with pytest.raises(ImproperlyConfigured, match="both"):
        content_credentials.signing_credential()


def test_a_key_others_may_read_is_refused_and_a_private_one_loads(settings, tmp_path):
    made = development_certificate("Acme")
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_bytes(made.credential.chain_pem)
    key.write_bytes(made.credential.key_pem)
    os.chmod(key, 0o644)
    settings.PROVENANCE_C2PA_CERT, settings.PROVENANCE_C2PA_KEY = str(cert), str(key)
    with pytest.raises(ImproperlyConfigured, match="chmod 600"):
        content_credentials.signing_credential()
    private = tmp_path / "private.pem"
    private.write_bytes(made.credential.key_pem)
    os.chmod(private, 0o600)
    settings.PROVENANCE_C2PA_KEY = str(private)
    assert content_credentials.signing_credential().alg == "es256"
