"""The resolution API's cast: public verification's (alice's key published), and the
organization's C2PA signing certificate, a development one made for the test."""

from __future__ import annotations

import os
from typing import Any

import pytest

from detector.credentials.certificates import development_certificate
from tests.provenance.public.conftest import (  # noqa: F401  (fixtures)
    _small_proof_of_work,
    anon,
    published,
    solve,
)


@pytest.fixture(scope="session")
def dev_certificate():
    return development_certificate("Provenance")


@pytest.fixture
def signing(settings: Any, tmp_path, dev_certificate):
    cert, key = tmp_path / "signer.pem", tmp_path / "signer.key"
    cert.write_bytes(dev_certificate.credential.chain_pem)
    key.write_bytes(dev_certificate.credential.key_pem)
    os.chmod(key, 0o600)
    settings.PROVENANCE_C2PA_CERT, settings.PROVENANCE_C2PA_KEY = str(cert), str(key)
    return dev_certificate
