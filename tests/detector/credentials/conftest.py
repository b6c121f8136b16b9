"""The credentials tests' cast: a development certificate and one text signed with it."""

from __future__ import annotations

import pytest

from detector.credentials.certificates import development_certificate
from detector.credentials.manifest import Generation
from detector.credentials.signing import sign_text

TEXT = "The river remembers every stone it has carried, and the cafe\u0301 by the bridge too."
GENERATION = Generation(model="SmolLM2-135M-Instruct", organization="Acme", key_id="k7-demo")


@pytest.fixture(scope="module")
def dev():
    return development_certificate("Acme")


@pytest.fixture(scope="module")
def signed(dev):
    return sign_text(TEXT, dev.credential, GENERATION)
