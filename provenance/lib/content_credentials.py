"""The product's Content Credentials settings, read once: the organization's C2PA signing
credential (``PROVENANCE_C2PA_CERT`` / ``PROVENANCE_C2PA_KEY``) and the trust anchors a
text's credentials are judged by (``PROVENANCE_C2PA_TRUST_ANCHORS``). Reading and signing are
``detector.credentials``'s; this module only finds their inputs (docs/c2pa.md)."""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from detector.credentials.reading import read_text
from detector.credentials.signing import SigningCredential


@functools.cache
def _credential(cert: str, key: str) -> SigningCredential | None:
    if not cert and not key:
        return None
    if not cert or not key:
        raise ImproperlyConfigured("set both PROVENANCE_C2PA_CERT and PROVENANCE_C2PA_KEY")
    key_path = Path(key)
    status = key_path.stat()
    if status.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or status.st_uid != os.geteuid():
        raise ImproperlyConfigured(
            f"the C2PA key {key_path} must be owned by this user and private: chmod 600 {key_path}"
        )
    return SigningCredential.from_pem(Path(cert).read_bytes(), key_path.read_bytes())


def signing_credential() -> SigningCredential | None:
    """The organization's C2PA signing credential, or None where none is configured."""
    return _credential(settings.PROVENANCE_C2PA_CERT, settings.PROVENANCE_C2PA_KEY)


@functools.cache
def _anchors(path: str) -> str | None:
    return Path(path).read_text() if path else None


def trust_anchors() -> str | None:
    """The trust anchors (PEM) credentials are judged by; None: trust is not evaluated."""
    return _anchors(settings.PROVENANCE_C2PA_TRUST_ANCHORS)


def credentials_of(text: str) -> dict[str, Any]:
    """What ``text``'s Content Credentials say (``detector.credentials.reading.Credentials``
    as every surface shows it: ``present``, ``valid``, ``trusted``, ``signer``, ...)."""
    return read_text(text, trust_anchors()).as_dict()
