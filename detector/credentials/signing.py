"""Signing manifests for texts: embedded as C2PA 2.3's text wrapper, or as a sidecar.

The Python binding of the C2PA SDK signs only into the asset formats it knows, and text is not
one of them; its native library exports the data-hashed signing functions of c2pa-rs's C API
(``c2pa_builder_data_hashed_placeholder``, ``c2pa_builder_sign_data_hashed_embeddable``),
called here through ctypes on the binding's own loaded library, with the data hash computed
here (see ``detector.credentials.manifest``).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import c2pa
import c2pa_text
from c2pa import c2pa as _sdk
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from detector.credentials.manifest import (
    MANIFEST_MEDIA_TYPE,
    TEXT_FORMAT,
    CredentialError,
    Generation,
)
from detector.credentials.reading import strip_wrapper


@dataclass(frozen=True)
class SigningCredential:
    """An organization's C2PA signing certificate: the chain (signer first) and its private
    key, PEM; ``alg`` is the SDK's name for the key's signature algorithm."""

    chain_pem: bytes
    key_pem: bytes
    alg: str
    tsa_url: str | None = None

    def __repr__(self) -> str:  # the key never reaches a log line or a traceback
        return f"SigningCredential(alg={self.alg!r}, subject={self.subject!r})"

    @property
    def subject(self) -> str:
        return x509.load_pem_x509_certificates(self.chain_pem)[0].subject.rfc4514_string()

    @classmethod
    def from_pem(
        cls, chain_pem: bytes, key_pem: bytes, tsa_url: str | None = None
    ) -> SigningCredential:
        """The credential with its algorithm read off the key (CredentialError when the key
        or the chain is unusable, or they do not belong together)."""
        try:
            key = serialization.load_pem_private_key(key_pem, password=None)
            chain = x509.load_pem_x509_certificates(chain_pem)
        except ValueError as exc:
            raise CredentialError(f"unreadable C2PA certificate or key: {exc}") from None
        if not chain:
            raise CredentialError("the C2PA certificate file holds no certificate")
        public = serialization.PublicFormat.SubjectPublicKeyInfo
        encoding = serialization.Encoding.DER
        if key.public_key().public_bytes(encoding, public) != chain[0].public_key().public_bytes(
            encoding, public
        ):
            raise CredentialError("the C2PA private key does not match the first certificate")
        return cls(chain_pem, key_pem, _algorithm(key), tsa_url)

    def signer(self) -> c2pa.Signer:
        info = c2pa.C2paSignerInfo(
            self.alg.encode(),
            self.chain_pem,
            self.key_pem,
            self.tsa_url.encode() if self.tsa_url else None,
        )
        try:
            return c2pa.Signer.from_info(info)
        except c2pa.C2paError as exc:
            raise CredentialError(f"the C2PA SDK refused the signing credential: {exc}") from None


def _algorithm(key: Any) -> str:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "ed25519"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        sizes = {256: "es256", 384: "es384", 521: "es512"}
        if key.curve.key_size in sizes:
            return sizes[key.curve.key_size]
    if isinstance(key, rsa.RSAPrivateKey):
        return "ps256"
    raise CredentialError(f"a C2PA signing key must be EC P-256/384/521, Ed25519 or RSA: {key}")


_BytesOut = ctypes.POINTER(ctypes.c_ubyte)


def _native() -> Any:
    lib = _sdk._lib
    lib.c2pa_builder_data_hashed_placeholder.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_char_p,
        ctypes.POINTER(_BytesOut),
    ]
    lib.c2pa_builder_data_hashed_placeholder.restype = ctypes.c_int64
    lib.c2pa_builder_sign_data_hashed_embeddable.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.POINTER(_BytesOut),
    ]
    lib.c2pa_builder_sign_data_hashed_embeddable.restype = ctypes.c_int64
    return lib


def _take(lib: Any, size: int, pointer: Any, what: str) -> bytes:
    if size < 0 or not pointer:
        error = _sdk._read_native_error() or "unknown error"
        raise CredentialError(f"the C2PA SDK could not {what}: {error}")
    try:
        return ctypes.string_at(pointer, size)
    finally:
        lib.c2pa_manifest_bytes_free(pointer)


@contextmanager
def _builder(definition: dict[str, Any]) -> Iterator[c2pa.Builder]:
    builder = c2pa.Builder.from_json(json.dumps(definition))
    try:
        yield builder
    finally:
        builder.close()


def _sign_data_hashed(
    definition: dict[str, Any],
    credential: SigningCredential,
    exclusion_for: Any,
    digest_for: Any,
) -> tuple[bytes, int]:
    """Sign ``definition`` with a data hash: ``exclusion_for(placeholder_size)`` gives the
    exclusion (start, length) or None, ``digest_for(exclusion)`` the SHA-256 of the asset's
    bytes less it. Returns the manifest store and the size the placeholder reserved."""
    lib = _native()
    signer = credential.signer()
    try:
        with _builder(definition) as builder:
            out = _BytesOut()
            size = lib.c2pa_builder_data_hashed_placeholder(
                builder._handle,
                signer.reserve_size(),
                MANIFEST_MEDIA_TYPE.encode(),
                ctypes.byref(out),
            )
            placeholder = _take(lib, size, out, "reserve the manifest's place")
            exclusion = exclusion_for(len(placeholder))
            data_hash = {
                "name": "jumbf manifest",
                "alg": "sha256",
                "exclusions": []
                if exclusion is None
                else [dict(zip(("start", "length"), exclusion, strict=True))],
                "hash": list(digest_for(exclusion)),
                "pad": [],
            }
            out = _BytesOut()
            size = lib.c2pa_builder_sign_data_hashed_embeddable(
                builder._handle,
                signer._handle,
                json.dumps(data_hash).encode(),
                MANIFEST_MEDIA_TYPE.encode(),
                None,
                ctypes.byref(out),
            )
            store = _take(lib, size, out, "sign the manifest")
    finally:
        signer.close()
    return store, len(placeholder)


# -- signing --------------------------------------------------------------------------------


def sign_text(
    text: str, credential: SigningCredential, generation: Generation, title: str = "reply.txt"
) -> str:
    """``text`` (NFC, any earlier wrapper removed) with a signed manifest store appended as
    C2PA 2.3's text wrapper."""
    body = unicodedata.normalize("NFC", strip_wrapper(text))
    return body + wrapper_for(body, credential, generation, title)


def wrapper_for(
    text: str, credential: SigningCredential, generation: Generation, title: str = "reply.txt"
) -> str:
    """The text wrapper to append to ``text`` exactly as it is (a reply whose text has
    already been sent, as a stream's): its hard binding hashes ``text``'s UTF-8 bytes."""
    data = text.encode("utf-8")
    wrapper_bytes = 0

    def exclusion_for(placeholder_size: int) -> tuple[int, int]:
        nonlocal wrapper_bytes
        wrapper_bytes = c2pa_text.worst_case_wrapper_byte_length(placeholder_size)
        return (len(data), wrapper_bytes)

    store, reserved = _sign_data_hashed(
        generation.definition(title, TEXT_FORMAT),
        credential,
        exclusion_for,
        lambda _exclusion: hashlib.sha256(data).digest(),
    )
    if len(store) > reserved:
        raise CredentialError("the signed manifest outgrew the place reserved for it")
    return c2pa_text.encode_wrapper_padded(store, wrapper_bytes)


def sign_sidecar(
    asset: bytes,
    fmt: str,
    credential: SigningCredential,
    generation: Generation,
    title: str = "asset",
) -> bytes:
    """A manifest store hard-bound to ``asset`` as a sidecar (its whole bytes hashed, nothing
    embedded), for an asset whose own credentials were stripped."""
    store, _ = _sign_data_hashed(
        generation.definition(title, fmt),
        credential,
        lambda _size: None,
        lambda _exclusion: hashlib.sha256(asset).digest(),
    )
    return store
