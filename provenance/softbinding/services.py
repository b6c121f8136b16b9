"""C2PA's soft binding resolution for this organization's texts (docs/c2pa.md).

``byContent`` is public verification underneath (``provenance.public.services.verify``: the
same proof of work or partner key, budgets, scrubbing guard and minimum length): an asset
whose watermark names a published key is answered with a manifest, signed here with the
organization's C2PA certificate as a sidecar hard-bound to the asset's bytes, whose
``c2pa.soft-binding`` assertion names the watermark and the key's public identifier. The
match's ``similarityScore`` is the public answer's strength band, never a p-value. Nothing
else matches: human text, a text too short to test, an inconclusive one.

``byBinding`` finds the manifests kept for a key's public identifier; ``manifests/{id}``
returns one as ``application/c2pa``.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from detector.credentials.manifest import (
    COMPOSITE_WITH_TRAINED_ALGORITHMIC_MEDIA,
    SOFT_BINDING_ALG,
    Generation,
    key_id_of_soft_binding_value,
)
from detector.credentials.reading import read_store, strip_wrapper
from detector.credentials.signing import sign_sidecar
from provenance.errors import ProblemError
from provenance.keys.models import WatermarkKey
from provenance.lib.content_credentials import signing_credential
from provenance.public import services as public
from provenance.public.selectors import published_key_list
from provenance.softbinding.models import Manifest

# The asset types byContent reads: plain text as it is, documents as public verification
# reads them (by the extension their type names).
TEXT_TYPES = {"text/plain": ".txt", "text/markdown": ".md", "text/html": ".html"}
DOCUMENT_TYPES = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
}
ASSET_TYPES = {**TEXT_TYPES, **DOCUMENT_TYPES}
# The public strength bands (``detector.decision.combined.STRENGTH_BANDS``: p < 10^(s+1)) as
# the API's 0-100 similarity: the stronger the band, the higher; never the p-value itself.
SIMILARITY = {-31: 100, -13: 90, -7: 75, -3: 50, -1: 25}
MAX_RESULTS = 100


class NoCredential(ProblemError):
    status_code = 503
    default_code = "c2pa_unconfigured"


def supported_algorithms() -> dict[str, Any]:
    return {"watermarks": [{"alg": SOFT_BINDING_ALG}], "fingerprints": []}


def max_results(value: Any) -> int:
    """The query's ``maxResults`` (default 10, 1 to ``MAX_RESULTS``)."""
    if value is None:
        return 10
    try:
        number = int(str(value))
    except ValueError:
        raise ProblemError("maxResults must be an integer") from None
    if not 1 <= number <= MAX_RESULTS:
        raise ProblemError(f"maxResults must lie in [1, {MAX_RESULTS}]")
    return number


def check_alg(alg: Any, required: bool) -> None:
    if alg is None and not required:
        return
    if alg != SOFT_BINDING_ALG:
        raise ProblemError(
            f"unsupported soft binding algorithm; this service reads {SOFT_BINDING_ALG}"
        )


def matches_by_content(
    *, caller: public.Caller, asset: bytes, media_type: str, limit: int
) -> list[dict[str, Any]]:
    """The manifests of the published model whose watermark ``asset`` carries (admitted:
    the caller's proof of work and budget were spent by the view)."""
    text, document = None, None
    if media_type == "text/plain":
        try:  # scored without a C2PA wrapper's characters, as every check is
            text = strip_wrapper(asset.decode("utf-8"))
        except UnicodeDecodeError:
            raise ProblemError("a text asset must be UTF-8") from None
    else:  # read as public verification reads a document of its type
        document = ("asset" + ASSET_TYPES[media_type], asset)
    answer = public.verify(
        caller=caller, text=text, document=document, ask_peers=False, admitted=True
    )
    if answer.get("verdict") != public.WATERMARKED or not answer.get("model"):
        return []
    key = next((k for k in published_key_list() if k.public_name == answer["model"]), None)
    if key is None or limit < 1:
        return []
    manifest = recovered_manifest(key, asset, media_type, requester_tag(caller))
    score = SIMILARITY.get(answer.get("strength") or -1, 25)
    return [{"manifestId": manifest.id, "similarityScore": score}]


def requester_tag(caller: public.Caller) -> str:
    """The caller as a recovered manifest keeps it: its requester (budgets.requester), keyed
    with the server's secret so that the database holds no address, even hashed."""
    secret = str(settings.SECRET_KEY).encode()
    return hmac.new(secret, caller.requester.encode(), hashlib.sha256).hexdigest()


def recovered_manifest(
    key: WatermarkKey, asset: bytes, media_type: str, requester: str
) -> Manifest:
    """The sidecar manifest of ``asset`` under ``key`` for ``requester`` (``requester_tag``):
    signed once per asset and requester. The same requester asking again gets the same
    manifest; another gets its own, as public verification never shows a requester when, or
    that, anyone else checked a text."""
    digest = hashlib.sha256(asset).hexdigest()
    found = {
        "key": key,
        "source": Manifest.Source.RECOVERED,
        "asset_sha256": digest,
        "media_type": media_type,
        "requester": requester,
    }
    kept = Manifest.objects.filter(**found).first()
    if kept is not None:
        return kept
    credential = signing_credential()
    if credential is None:
        raise NoCredential("this service has no C2PA signing certificate configured")
    # The watermark shows that the asset holds the model's text, not that the model wrote
    # every byte of it (a human preface, a document's other pages): the composite type.
    generation = Generation(
        key.public_name,
        _organization(),
        key.public_id,
        digital_source_type=COMPOSITE_WITH_TRAINED_ALGORITHMIC_MEDIA,
    )
    store = sign_sidecar(asset, media_type, credential, generation, title="asset")
    label = _label(store, asset, media_type)
    try:
        with transaction.atomic():
            return Manifest.objects.create(id=label, store=store, **found)
    except IntegrityError:  # another request of this requester signed it first: that one
        return Manifest.objects.get(**found)


def matches_by_binding(
    alg: Any, value: Any, limit: int, requester: str | None = None
) -> list[dict[str, Any]]:
    """The manifests kept for the key whose public identifier ``value`` names, newest first:
    of those recovered by the watermark, only ``requester``'s own (none for no requester)."""
    check_alg(alg, required=True)
    if not isinstance(value, str) or not value or len(value) > 512:
        raise ProblemError("value must be a base64 soft binding value")
    public_id = key_id_of_soft_binding_value(value)
    if public_id is None:
        raise ProblemError("value must be a base64 soft binding value")
    key = next((k for k in published_key_list() if k.public_id == public_id), None)
    if key is None:
        return []
    if not requester:
        return []
    ids = Manifest.objects.filter(key=key, requester=requester).values_list("id", flat=True)
    ids = ids[:limit]
    return [{"manifestId": manifest_id} for manifest_id in ids]


def manifest_store(manifest_id: str) -> bytes | None:
    """A kept manifest store, by its identifier (None: unknown)."""
    if not manifest_id.startswith("urn:c2pa:") or len(manifest_id) > 100:
        raise ProblemError("a manifest identifier is urn:c2pa:<uuid>")
    manifest = Manifest.objects.filter(pk=manifest_id).only("store").first()
    return None if manifest is None else bytes(manifest.store)


def _label(store: bytes, asset: bytes, media_type: str) -> str:
    """The active manifest's label in ``store``, as the SDK reads it."""
    read = read_store(store, asset, media_type)
    if read.manifest_id is None:
        return f"urn:c2pa:{uuid.uuid4()}"
    return read.manifest_id


def _organization() -> str:
    return str(settings.PROVENANCE_PUBLIC_ORGANIZATION)
