"""Reading a text's Content Credentials: the wrapper found, the manifest validated by the C2PA
SDK against the text, and the one check the SDK cannot make on text made here (see
``detector.credentials.manifest``)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import c2pa
import c2pa_text

from detector.credentials.manifest import GENERATION_LABEL, TEXT_FORMAT
from detector.text.wrapper import WRAPPER, without_wrappers

_LOCATION_EXPLANATION = "exclusion does not match the manifest location"
_UNTRUSTED = "signingCredential.untrusted"


def strip_wrapper(text: str) -> str:
    """``text`` without any C2PA text wrapper's characters (as it is, when it has none)."""
    return without_wrappers(text)[0]


@dataclass
class Credentials:
    """What a text's Content Credentials say, as every surface shows them.

    ``present``: the text carries a C2PA text wrapper. ``valid``: its manifest's signature,
    assertions and hard binding over this text all check (the text is unchanged since it was
    signed). ``trusted``: the signer's certificate chains to one of the trust anchors given
    (None: no anchors were given, so trust was not evaluated). ``reasons``: every finding
    against the credential, as C2PA validation codes with their explanations."""

    present: bool
    valid: bool = False
    trusted: bool | None = None
    signer: str | None = None
    issuer: str | None = None
    claim_generator: str | None = None
    created: str | None = None
    model: str | None = None
    organization: str | None = None
    manifest_id: str | None = None
    soft_binding: dict[str, str] | None = None
    digital_source_type: str | None = None
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "present": self.present,
            "valid": self.valid,
            "trusted": self.trusted,
            "signer": self.signer,
            "issuer": self.issuer,
            "claim_generator": self.claim_generator,
            "created": self.created,
            "model": self.model,
            "organization": self.organization,
            "manifest_id": self.manifest_id,
            "soft_binding": self.soft_binding,
            "digital_source_type": self.digital_source_type,
            "reasons": list(self.reasons),
        }


ABSENT = Credentials(present=False)


def read_text(text: str, trust_anchors_pem: str | None = None) -> Credentials:
    """The Content Credentials ``text`` carries, validated against ``text`` itself."""
    if "\ufeff" not in text:  # every wrapper starts with U+FEFF: most texts stop here
        return Credentials(present=False)
    try:
        info = c2pa_text.find_wrapper_info(text)
    except ValueError:
        return Credentials(
            present=True, reasons=["manifest.text.multipleWrappers: more than one C2PA wrapper"]
        )
    if info is None:
        if WRAPPER.search(text):
            return Credentials(
                present=True,
                reasons=["manifest.text.corruptedWrapper: a C2PA wrapper that does not decode"],
            )
        return Credentials(present=False)
    store, start, length = info
    return read_store(store, text.encode("utf-8"), TEXT_FORMAT, trust_anchors_pem, (start, length))


def read_store(
    store: bytes,
    asset: bytes,
    fmt: str,
    trust_anchors_pem: str | None = None,
    embedded_at: tuple[int, int] | None = None,
) -> Credentials:
    """Validate a manifest store against ``asset``: embedded in it at ``embedded_at`` (byte
    start, length: the text wrapper), or a sidecar (None)."""
    try:
        reader = c2pa.Reader(fmt, io.BytesIO(asset), store, context=_context(trust_anchors_pem))
    except c2pa.C2paError as exc:
        return Credentials(present=True, reasons=[f"manifest.unreadable: {exc}"])
    try:
        return _credentials(reader, trust_anchors_pem is not None, embedded_at)
    finally:
        reader.close()


def _context(trust_anchors_pem: str | None) -> c2pa.Context:
    if trust_anchors_pem is None:
        settings: dict[str, Any] = {"verify": {"verify_trust": False}}
    else:
        settings = {"verify": {"verify_trust": True}, "trust": {"trust_anchors": trust_anchors_pem}}
    settings["verify"]["ocsp_fetch"] = False
    settings["verify"]["remote_manifest_fetch"] = False
    return c2pa.Context.from_dict(settings)


def _credentials(
    reader: c2pa.Reader, trust_evaluated: bool, embedded_at: tuple[int, int] | None
) -> Credentials:
    manifest = reader.get_active_manifest() or {}
    results = (reader.get_validation_results() or {}).get("activeManifest", {})
    failures = list(results.get("failure", []))
    successes = {item.get("code") for item in results.get("success", [])}
    exclusions = _data_hash_exclusions(reader, manifest.get("label"))
    expected = [] if embedded_at is None else [{"start": embedded_at[0], "length": embedded_at[1]}]
    reasons = []
    for item in failures:
        code = item.get("code", "")
        explanation = item.get("explanation", "")
        if (
            code == "assertion.dataHash.mismatch"
            and _LOCATION_EXPLANATION in explanation
            and embedded_at is not None
        ):
            continue  # replaced by the check below, made on the text itself
        reasons.append(f"{code}: {explanation}" if explanation else code)
    if exclusions != expected:
        reasons.append(
            "assertion.dataHash.mismatch: the hard binding's exclusion is not the C2PA wrapper's"
            " place in this text"
        )
    if "assertion.dataHash.match" not in successes and not any(
        reason.startswith("assertion.dataHash") for reason in reasons
    ):
        reasons.append("claim.hardBindings.missing: no data hash over this text")
    untrusted = any(reason.startswith(_UNTRUSTED) for reason in reasons)
    crypto_reasons = [reason for reason in reasons if not reason.startswith(_UNTRUSTED)]
    signature = manifest.get("signature_info") or {}
    generation = _assertion(manifest, GENERATION_LABEL) or {}
    actions = (_assertion(manifest, "c2pa.actions.v2") or {}).get("actions") or [{}]
    action: dict[str, Any] = actions[0]
    binding = _assertion(manifest, "c2pa.soft-binding") or {}
    blocks = binding.get("blocks") or [{}]
    claim_generator: dict[str, Any] = (manifest.get("claim_generator_info") or [{}])[0]
    return Credentials(
        present=True,
        valid=not crypto_reasons,
        trusted=(not untrusted) if trust_evaluated else None,
        signer=signature.get("common_name"),
        issuer=signature.get("issuer"),
        claim_generator=" ".join(
            str(claim_generator[part]) for part in ("name", "version") if part in claim_generator
        )
        or None,
        created=signature.get("time") or action.get("when"),
        model=generation.get("model") or (action.get("softwareAgent") or {}).get("name"),
        organization=generation.get("organization"),
        manifest_id=manifest.get("label"),
        soft_binding=(
            {"alg": str(binding.get("alg")), "value": str(blocks[0].get("value"))}
            if binding
            else None
        ),
        digital_source_type=action.get("digitalSourceType"),
        reasons=reasons,
    )


def _assertion(manifest: dict[str, Any], label: str) -> dict[str, Any] | None:
    for assertion in manifest.get("assertions") or []:
        if assertion.get("label") == label:
            data = assertion.get("data")
            return data if isinstance(data, dict) else None
    return None


def _data_hash_exclusions(reader: c2pa.Reader, label: str | None) -> list[dict[str, int]]:
    """The active manifest's ``c2pa.hash.data`` exclusions, as the SDK parsed them."""
    detailed = json.loads(reader.detailed_json())
    manifest = (detailed.get("manifests") or {}).get(label or "") or {}
    data_hash = (manifest.get("assertion_store") or {}).get("c2pa.hash.data") or {}
    return [
        {"start": int(item["start"]), "length": int(item["length"])}
        for item in data_hash.get("exclusions") or []
    ]
