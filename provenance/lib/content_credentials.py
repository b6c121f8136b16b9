"""The organization's C2PA signing credential (``PROVENANCE_C2PA_CERT`` /
``PROVENANCE_C2PA_KEY``), read once. Signing is ``detector.credentials``'s; this module only
finds its input (docs/c2pa.md). The trust anchors a text's credentials are judged by are
read where checks are scored (``provenance.scoring.service``)."""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

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
