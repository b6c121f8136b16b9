"""Key values at rest: Fernet under the KEK, several KEKs for a rotation (the first
encrypts, all decrypt), a KEK file made once in the embedded default, and errors that say
nothing about the value."""

from __future__ import annotations

import stat

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from provenance.keys.models import WatermarkKey
from provenance.lib import crypto
from provenance.lib.crypto import (
    KeyDecryptionError,
    decrypt_bytes,
    decrypt_value,
    encrypt_bytes,
    encrypt_value,
    reencrypt,
)
from tests.provenance.conftest import KEY_VALUE


@pytest.fixture
def kek_file(settings, tmp_path):
    """The embedded default: no KEK in the settings, a KEK file in a fresh data directory."""
    settings.PROVENANCE_KEK = ""
    settings.PROVENANCE_EMBEDDED = True
    settings.DATA_DIR = tmp_path
    crypto._fernet.cache_clear()
    yield tmp_path / "kek.key"
    crypto._fernet.cache_clear()


def test_the_key_value_is_stored_encrypted_and_decrypts_back(alice_key):
    stored = bytes(WatermarkKey.objects.get(id=alice_key.id).encrypted_value)
    assert str(KEY_VALUE).encode() not in stored
    assert KEY_VALUE.to_bytes(8, "big") not in stored
    assert decrypt_value(stored) == KEY_VALUE


def test_a_tampered_ciphertext_is_refused_without_detail(alice_key):
    stored = bytearray(bytes(alice_key.encrypted_value))
    stored[-5] ^= 1
    with pytest.raises(KeyDecryptionError) as info:
        decrypt_value(bytes(stored))
    assert str(KEY_VALUE) not in str(info.value)


def test_a_value_round_trips_and_each_encryption_differs():
    first, second = encrypt_value(KEY_VALUE), encrypt_value(KEY_VALUE)
    assert first != second and decrypt_value(first) == decrypt_value(second) == KEY_VALUE
    assert decrypt_bytes(encrypt_bytes(b"private half")) == b"private half"


def test_a_new_kek_in_front_decrypts_the_old_values_and_reencrypts_them(settings):
    old = settings.PROVENANCE_KEK
    token = encrypt_value(KEY_VALUE)
    new = Fernet.generate_key().decode()
    settings.PROVENANCE_KEK = f"{new},{old}"
    assert decrypt_value(token) == KEY_VALUE
    rotated = reencrypt(token)
    settings.PROVENANCE_KEK = new  # the old KEK dropped
    assert decrypt_value(rotated) == KEY_VALUE
    with pytest.raises(KeyDecryptionError, match="does not decrypt"):
        decrypt_value(token)
    with pytest.raises(KeyDecryptionError):
        reencrypt(token)
    with pytest.raises(KeyDecryptionError):
        decrypt_bytes(token)


def test_a_malformed_kek_is_refused_by_name(settings):
    settings.PROVENANCE_KEK = "not-a-fernet-key"
    with pytest.raises(ValueError, match="comma-separated Fernet keys"):
        encrypt_value(1)


def test_production_without_a_kek_is_refused(settings):
    settings.PROVENANCE_KEK = ""
    settings.PROVENANCE_EMBEDDED = False
    crypto._fernet.cache_clear()
    try:
        with pytest.raises(ImproperlyConfigured, match="PROVENANCE_KEK must be set"):
            encrypt_value(1)
    finally:
        crypto._fernet.cache_clear()


def test_the_embedded_default_makes_one_private_kek_file(kek_file):
    token = encrypt_value(KEY_VALUE)
    assert stat.S_IMODE(kek_file.stat().st_mode) == 0o600
    kek = kek_file.read_text().strip()
    Fernet(kek)  # a Fernet key
    crypto._fernet.cache_clear()
    assert decrypt_value(token) == KEY_VALUE and kek_file.read_text().strip() == kek


def test_the_kek_file_rotation_prepends_then_keeps_the_new_kek(kek_file):
    token = encrypt_value(KEY_VALUE)
    old = kek_file.read_text().strip()
    crypto.kek_file_prepend_new()
    new, kept = kek_file.read_text().strip().split(",")
    assert kept == old and new != old and stat.S_IMODE(kek_file.stat().st_mode) == 0o600
    rotated = reencrypt(token)
    crypto.kek_file_keep_first()
    assert kek_file.read_text().strip() == new
    assert decrypt_value(rotated) == KEY_VALUE
    with pytest.raises(KeyDecryptionError):
        decrypt_value(token)
