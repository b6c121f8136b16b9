"""What a manifest for generated text says, and the names it says it with.

Content Credentials (C2PA) for generated text: a manifest store signed for a reply and
embedded in it (``detector.credentials.signing``), read back and validated from a pasted text
(``detector.credentials.reading``), and signed beside a text as a sidecar when the watermark
recovers it.

Two bindings tie a manifest to a text:

- **Hard binding**, C2PA 2.3's "embedding manifests into unstructured text": the manifest
  store (JUMBF) is encoded as a ``C2PATextManifestWrapper`` (U+FEFF, then one Unicode
  variation selector per byte: magic ``C2PATXT\\0``, version, length, the store) appended to
  the NFC-normalized text, and a ``c2pa.hash.data`` assertion hashes the text's UTF-8 bytes
  with one exclusion, the wrapper's byte range. The wrapper is padded to the worst-case byte
  length of a store of the placeholder's size, so the exclusion is known before the
  signature that it is part of.
- **Soft binding**, a ``c2pa.soft-binding`` assertion naming this project's watermark
  algorithm (``SOFT_BINDING_ALG``) with the key's public identifier as its value (never the
  key): the watermark survives retyping and stripping, and the soft binding resolution API
  finds the manifest by it.

Which library does what. ``c2pa-text`` (the wrapper's reference implementation) encodes,
finds and decodes the wrapper. The C2PA SDK (``c2pa-python``, c2pa-rs) builds, signs, reads
and validates the manifest store: the signature, the certificate chain against the trust
anchors given, every assertion's hash, and the data hash over the text's bytes less the
exclusion. Two parts are not in the Python binding, and are done here instead:

- Signing with a caller-computed data hash: the binding's ``Builder.sign`` embeds into the
  asset formats it knows, and text is not one of them. Its native library exports the
  data-hashed signing functions (``c2pa_builder_data_hashed_placeholder``,
  ``c2pa_builder_sign_data_hashed_embeddable``, the C API of the same c2pa-rs); they are
  called here through ctypes on the binding's own loaded library.
- Where the manifest sits: c2pa-rs checks that a data hash's exclusion is where the asset's
  format handler finds the manifest, and it has no handler for text, so it reports that check
  as ``assertion.dataHash.mismatch`` ("data hash exclusion does not match the manifest
  location in the asset") even where the hash itself matched (``assertion.dataHash.match``).
  Here that one finding is replaced by the same check made on the text: the exclusion must be
  exactly the wrapper's byte range. Every other finding of the SDK stands.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from dataclasses import dataclass
from typing import Any

import detector

SOFT_BINDING_ALG = "io.github.provenance.gumbelmax.1"
TRAINED_ALGORITHMIC_MEDIA = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
# An asset that holds trained algorithmic media among other content: what a watermark found in
# an asset shows (the model's text is in it), not that the model created all of it.
COMPOSITE_WITH_TRAINED_ALGORITHMIC_MEDIA = (
    "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia"
)
GENERATION_LABEL = "io.github.provenance.generation"  # the model and the organization
TEXT_FORMAT = "text/plain"
MANIFEST_MEDIA_TYPE = "application/c2pa"
CLAIM_GENERATOR = "Provenance"


class CredentialError(Exception):
    """A manifest could not be built or signed (bad credential, SDK failure)."""


@dataclass(frozen=True)
class Generation:
    """What a manifest says of a text: the model that wrote it, the organization that runs
    it, and the public identifier of the watermark key it was sampled under."""

    model: str
    organization: str
    key_id: str
    created: datetime.datetime | None = None
    # trainedAlgorithmicMedia for a reply the generator signs; a manifest recovered by the
    # watermark says only that the asset holds the model's text (the composite type)
    digital_source_type: str = TRAINED_ALGORITHMIC_MEDIA

    def definition(self, title: str, fmt: str) -> dict[str, Any]:
        """The manifest definition the SDK's builder takes."""
        when = (self.created or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
        action = {
            "action": "c2pa.created",
            "digitalSourceType": self.digital_source_type,
            "softwareAgent": {"name": self.model},
            "when": when.isoformat(timespec="seconds").replace("+00:00", "Z"),
        }
        value = c2pa_soft_binding_value(self.key_id)
        return {
            "claim_generator_info": [{"name": CLAIM_GENERATOR, "version": detector.__version__}],
            "title": title,
            "format": fmt,
            "assertions": [
                {"label": "c2pa.actions.v2", "data": {"actions": [action]}},
                {
                    "label": "c2pa.soft-binding",
                    "data": {
                        "alg": SOFT_BINDING_ALG,
                        "blocks": [{"scope": {}, "value": value}],
                        "pad": [0],
                    },
                },
                {
                    "label": GENERATION_LABEL,
                    "data": {"model": self.model, "organization": self.organization},
                },
            ],
        }


def c2pa_soft_binding_value(key_id: str) -> str:
    """The soft binding's value for a key: its public identifier, base64 (the resolution
    API's ``value``)."""
    return base64.b64encode(key_id.encode()).decode()


def key_id_of_soft_binding_value(value: str) -> str | None:
    """The public identifier a soft binding value names, or None when it is not one."""
    try:
        decoded = base64.b64decode(value.encode("ascii"), validate=True).decode()
    except (binascii.Error, UnicodeError, ValueError):
        return None
    return decoded if decoded and decoded.isprintable() else None
