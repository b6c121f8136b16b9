"""The entry an organization proposes for C2PA's soft binding algorithm list: the shape the
list's entry schema asks for, and the algorithm the product actually resolves."""

from __future__ import annotations

import json
import re
from pathlib import Path

from detector.credentials.manifest import SOFT_BINDING_ALG

ENTRY = Path(__file__).resolve().parents[3] / "docs" / "c2pa-algorithm-list-entry.json"
# The list's entry schema: an array of objects with these required fields, ``alg`` in the
# reverse-domain form of assertion labels, ``type`` a watermark or a fingerprint, and exactly
# one of decoded and encoded media types (decoded: IANA top-level types).
REQUIRED = {"identifier", "alg", "type", "entryMetadata"}
METADATA = {"description", "dateEntered", "contact", "informationalUrl"}
TOP_LEVEL_TYPES = {"application", "audio", "image", "model", "text", "video"}


def test_the_entry_has_the_lists_shape_and_names_our_algorithm():
    (entry,) = json.loads(ENTRY.read_text())
    assert REQUIRED <= set(entry)
    assert isinstance(entry["identifier"], int) and 0 <= entry["identifier"] <= 65535
    assert entry["alg"] == SOFT_BINDING_ALG
    assert re.fullmatch(r"[a-zA-Z0-9]+\.[a-zA-Z0-9.]+", entry["alg"])
    assert entry["type"] == "watermark"
    assert ("decodedMediaTypes" in entry) != ("encodedMediaTypes" in entry)
    assert set(entry["decodedMediaTypes"]) <= TOP_LEVEL_TYPES and entry["decodedMediaTypes"]
    assert METADATA <= set(entry["entryMetadata"])
    assert "@" in entry["entryMetadata"]["contact"]
    assert all(url.endswith("/c2pa/v1/") for url in entry["softBindingResolutionApis"])
