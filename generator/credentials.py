"""Content Credentials on replies: a C2PA manifest store signed for each reply's text and
appended to it as C2PA 2.3's text wrapper (``detector.credentials``).

Off by default. On for every watermarked reply with the server flag ``--content-credentials``
(``$PROVENANCE_CONTENT_CREDENTIALS=1``), for one key's replies with ``"content_credentials":
true`` in its key file entry, or for one request with ``"content_credentials": true`` in its
body. Only a watermarked reply is signed: its manifest's soft binding names the watermark and
the key's public identifier (``"public_id"`` in the key file entry, else the key's name),
which would be false of a reply drawn without the key. The signing certificate and its
private key are files (``--c2pa-cert``, ``--c2pa-key``); the key file must be private to the
server's user. The manifest is over the reply's text exactly as it was sent, so a streamed
reply's wrapper comes in one more event after its last token.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from detector.credentials.manifest import CredentialError, Generation
from detector.credentials.signing import SigningCredential, wrapper_for
from generator import config
from generator.config import KeyOptions

log = logging.getLogger(__name__)
REQUEST_FIELD = "content_credentials"


class CredentialsConfigError(ValueError):
    """The server's Content Credentials settings are unusable (the message names a path)."""


def _private_key(path: Path) -> bytes:
    try:
        info = path.stat()
        data = path.read_bytes()
    except OSError as exc:
        raise CredentialsConfigError(f"cannot read the C2PA key {path}: {exc.strerror}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or info.st_uid != os.geteuid():
        raise CredentialsConfigError(
            f"the C2PA key {path} must be owned by this user and private to it: chmod 600 {path}"
        )
    return data


@dataclass(frozen=True)
class ReplyCredentials:
    """Whether and how replies are signed."""

    credential: SigningCredential | None = None
    organization: str = ""
    every_reply: bool = False

    @classmethod
    def load(
        cls,
        cert: str | None,
        key: str | None,
        organization: str | None,
        every_reply: bool = False,
    ) -> ReplyCredentials:
        """From the certificate and key files (none: replies are never signed; a server told
        to sign every reply without them refuses to start)."""
        if not cert and not key:
            if every_reply:
                raise CredentialsConfigError(
                    "--content-credentials needs a signing certificate: --c2pa-cert and --c2pa-key"
                )
            return cls()
        if not cert or not key:
            raise CredentialsConfigError("give both --c2pa-cert and --c2pa-key")
        try:
            chain = Path(cert).read_bytes()
        except OSError as exc:
            raise CredentialsConfigError(
                f"cannot read the C2PA certificate {cert}: {exc.strerror}"
            ) from None
        try:
            credential = SigningCredential.from_pem(chain, _private_key(Path(key)))
        except CredentialError as exc:
            raise CredentialsConfigError(str(exc)) from None
        return cls(credential, organization or credential_organization(credential), every_reply)

    @classmethod
    def from_env(cls) -> ReplyCredentials:
        return cls.load(
            config.c2pa_cert(),
            config.c2pa_key(),
            config.c2pa_organization(),
            config.content_credentials(),
        )

    def wanted(self, options: KeyOptions, requested: object) -> bool:
        """Whether a watermarked reply under a key with ``options`` is signed (``requested``:
        the request body's ``content_credentials``)."""
        if self.credential is None:
            return False
        return self.every_reply or options.content_credentials or requested is True

    def wrapper(self, text: str, model: str, options: KeyOptions) -> str:
        """The wrapper for ``text`` as sent ("" when signing fails: the reply goes out
        unsigned and the failure is logged, never a key)."""
        if self.credential is None or not options.public_id:
            return ""
        generation = Generation(model, self.organization, options.public_id)
        try:
            return wrapper_for(text, self.credential, generation)
        except CredentialError as exc:
            log.error("reply left without Content Credentials: %s", exc)
            return ""


def credential_organization(credential: SigningCredential) -> str:
    """The organization named by the signing certificate's subject (O=), else its subject."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    subject = x509.load_pem_x509_certificates(credential.chain_pem)[0].subject
    names = subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return str(names[0].value) if names else subject.rfc4514_string()
