"""The generator's key file, written from the registry.

The generator loads keys only from a JSON file (``generator.config.KeyStore``) and requests
pick one by name. The web side owns the registry, so it writes that file: every *active* key
of every team, under a name that is unique across teams (``k<id>-<registry name>``); the
playground only ever sends names of the caller's own team's keys. The file holds secrets: it
is written owner-only (0600) and replaced atomically, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from generator.config import CONTENT_CREDENTIALS_FIELD, PUBLIC_ID_FIELD
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import key_config

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")


def generator_key_name(key: WatermarkKey) -> str:
    """The name under which the generator knows ``key`` (its key-name rules, unique)."""
    return f"k{key.pk}-{_UNSAFE.sub('-', key.name)}"[:128]


def active_keys() -> list[WatermarkKey]:
    return list(WatermarkKey.objects.filter(status=WatermarkKey.Status.ACTIVE).order_by("id"))


def keyset_fingerprint() -> str:
    """Changes whenever the set of active keys (or their settings) changes; holds no value."""
    rows = WatermarkKey.objects.filter(status=WatermarkKey.Status.ACTIVE).order_by("id")
    fields = rows.values_list(
        "id", "name", "algorithm", "alpha", "context_width", "deduplicate", "content_credentials"
    )
    return hashlib.sha256(repr(list(fields)).encode()).hexdigest()


def keyfile_content(keys: list[WatermarkKey]) -> dict[str, dict[str, object]]:
    """vLLM's per-key JSON shape with every field (``KeyConfig.to_vllm``), and the generator's
    own: the key's public identifier and whether its replies carry Content Credentials."""
    # key_config decrypts: the value goes to the file and nowhere else.
    return {
        generator_key_name(key): {
            **key_config(key).to_vllm(),
            CONTENT_CREDENTIALS_FIELD: key.content_credentials,
            PUBLIC_ID_FIELD: key.public_id,
        }
        for key in keys
    }


def keyfile_write(path: str | os.PathLike[str]) -> int:
    """Write the key file for every active key; returns how many keys it holds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    content = keyfile_content(active_keys())
    # mkstemp creates the file 0600; os.replace swaps it in atomically.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".keys-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(content, handle)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(content)
