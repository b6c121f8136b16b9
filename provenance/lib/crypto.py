"""Encryption at rest of key values with a key-encryption key (KEK).

PROVENANCE_KEK holds one or more comma-separated Fernet keys: the first encrypts, all
decrypt (so a KEK can be rotated by prepending a new one). Unset, the embedded default
creates one in the data directory on first use, readable by the owner only, and refuses a
file that another user owns or may write (``provenance.private_files``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from provenance.private_files import private_load_or_create, private_read, private_write


class KeyDecryptionError(Exception):
    """The stored ciphertext does not open with the configured KEK(s)."""


def _kek_file() -> Path:
    return Path(settings.DATA_DIR) / "kek.key"


def _load_or_create_kek_file() -> str:
    return private_load_or_create(_kek_file(), lambda: Fernet.generate_key().decode())


@lru_cache(maxsize=4)
def _fernet(kek_setting: str) -> MultiFernet:
    if not kek_setting and not settings.PROVENANCE_EMBEDDED:
        # Production: web and workers must share one KEK from the environment.
        raise ImproperlyConfigured("PROVENANCE_KEK must be set when PROVENANCE_EMBEDDED=0")
    raw = kek_setting or _load_or_create_kek_file()
    try:
        return MultiFernet([Fernet(part.strip()) for part in raw.split(",") if part.strip()])
    except ValueError:
        raise ValueError("PROVENANCE_KEK must be comma-separated Fernet keys") from None


def encrypt_value(value: int) -> bytes:
    return _fernet(settings.PROVENANCE_KEK).encrypt(str(value).encode())


def decrypt_value(token: bytes | memoryview) -> int:
    try:
        plain = _fernet(settings.PROVENANCE_KEK).decrypt(bytes(token))
    except InvalidToken:
        # No detail: the message must not help anyone and must not carry the value.
        raise KeyDecryptionError("stored key does not decrypt with the configured KEK") from None
    return int(plain.decode())


def kek_file_prepend_new() -> Path:
    """Embedded default: put a fresh KEK in front of the file's (the old ones still decrypt
    until ``kek_file_keep_first`` drops them after re-encryption)."""
    path = _kek_file()
    old = _load_or_create_kek_file()
    private_write(path, Fernet.generate_key().decode() + "," + old)
    _fernet.cache_clear()
    return path


def kek_file_keep_first() -> None:
    path = _kek_file()
    first = private_read(path).split(",")[0]
    private_write(path, first)
    _fernet.cache_clear()


def reencrypt(token: bytes | memoryview) -> bytes:
    """Decrypt with any configured KEK, encrypt with the first (the value never leaves)."""
    try:
        return _fernet(settings.PROVENANCE_KEK).rotate(bytes(token))
    except InvalidToken:
        raise KeyDecryptionError("stored key does not decrypt with the configured KEK") from None


def encrypt_bytes(value: bytes) -> bytes:
    """Encrypt a secret that is not a watermark key (the report-signing key) under the KEK."""
    return _fernet(settings.PROVENANCE_KEK).encrypt(value)


def decrypt_bytes(token: bytes | memoryview) -> bytes:
    try:
        return _fernet(settings.PROVENANCE_KEK).decrypt(bytes(token))
    except InvalidToken:
        raise KeyDecryptionError("stored key does not decrypt with the configured KEK") from None
