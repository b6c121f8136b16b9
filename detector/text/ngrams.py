"""Keyless tables of (context, token) n-grams that recur across human texts.

De-duplication makes the scores of one text i.i.d. Exp(1) under the null, but a fixed key gives a
fixed score to each (context, token) pair, so texts that share pairs (forms, package lists,
boilerplate code) have correlated p-values under one key: a corpus audited under the deployed
key can see several times the nominal false-positive rate. Skipping the pairs that recur across
human documents removes most of that correlation at the source. The choice of skipped positions
depends on the text alone, never on the key, so the scores that remain are still i.i.d. Exp(1)
under the null and every p-value stays exact.

A pair is identified by a keyless 64-bit hash of the ``width`` context ids (-1 padding as at
generation) and the token id; a table is the sorted array of the hashes of pairs seen in at
least ``min_docs`` distinct documents. Membership goes through a hash set built once per
table (O(1) per token) on long texts, through binary search on short ones.
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector.core.contexts import COMPILED_FROM, as_token_array, build_contexts

_M1 = np.uint64(0xBF58476D1CE4E5B9)  # splitmix64's finaliser constants
_M2 = np.uint64(0x94D049BB133111EB)
_TOKEN_TAG = np.uint64(1 << 40)  # keeps the token's word apart from the context's


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def gram_hashes(
    token_ids: ArrayLike, width: int = 4, contexts: NDArray[np.int64] | None = None
) -> NDArray[np.uint64]:
    """``[n]`` keyless hashes of every position's (context, token) pair (``contexts``: the
    ``build_contexts(ids, width)`` the caller has already)."""
    ids = as_token_array(token_ids)
    if contexts is None:
        contexts = build_contexts(ids, width)  # [n, width]
    with np.errstate(over="ignore"):
        h = np.full(ids.shape[0], np.uint64(width), np.uint64)
        for j in range(width):
            h = _mix(h ^ (contexts[:, j] + 1).astype(np.uint64))
        return _mix(h ^ (ids.astype(np.uint64) + _TOKEN_TAG))


def fingerprints(
    token_ids: ArrayLike, width: int = 4, contexts: NDArray[np.int64] | None = None
) -> NDArray[np.uint32]:
    """``[n]`` 32-bit fingerprints (the high word of ``gram_hashes``): what a table stores.

    Two distinct pairs share a fingerprint with probability 2**-32, so a table of a few million
    entries marks about one unrelated position in a thousand as common: a small loss of scored
    tokens, never of validity (which positions are skipped still depends on the text alone).
    """
    return (gram_hashes(token_ids, width, contexts) >> np.uint64(32)).astype(np.uint32)


TABLE_HASH_VERSION = "provenance-ngram-table/v1"


@dataclass(frozen=True)
class NgramTable:
    """Pairs to skip: sorted unique fingerprints for one tokenizer and context width."""

    hashes: NDArray[np.uint32] = field(repr=False)
    width: int = 4
    tokenizer_hash: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return int(self.hashes.shape[0])

    @functools.cached_property
    def content_hash(self) -> str:
        """SHA-256 of what decides which pairs are skipped (width, tokenizer, fingerprints;
        not the build metadata): a signed report names the table by it, so a rebuilt table
        is told apart from the one that filtered the report's scored tokens (~5 ms for 1 M)."""
        digest = hashlib.sha256(f"{TABLE_HASH_VERSION}\0{self.width}\0".encode())
        digest.update(f"{self.tokenizer_hash or ''}\0".encode())
        digest.update(self.hashes.astype("<u4", copy=False).tobytes())
        return digest.hexdigest()

    def applies_to(self, context_width: int) -> bool:
        """Whether the table filters a key of this context width (its pairs have its width)."""
        return self.width == context_width

    @functools.cached_property
    def hash_set(self) -> Any:  # ``detector.core.compiled.HashSet``, built once (~9 ms for 1 M)
        """The fingerprints in the compiled hash set of long texts' look-ups."""
        from detector.core import compiled

        return compiled.HashSet(self.hashes)

    def contains(self, found: NDArray[np.uint32]) -> NDArray[np.bool_]:
        """True where a fingerprint (``fingerprints``) is in the table.

        Short texts (audit texts, checks) look up by binary search in the sorted table: no
        set-up, about 20 comparisons a token. Long ones (``COMPILED_FROM`` tokens and more) use
        the compiled hash set (O(1) a token: 3 ms for 260 K tokens against 10 ms for pandas'
        index). Both answer exact membership.
        """
        if len(self) == 0 or found.shape[0] == 0:
            return np.zeros(found.shape[0], np.bool_)
        if found.shape[0] >= COMPILED_FROM:
            return self.hash_set.contains(found)  # type: ignore[no-any-return]
        return self.searched(found)

    def searched(self, found: NDArray[np.uint32]) -> NDArray[np.bool_]:
        """``contains`` by binary search (the reference the hash set is pinned to)."""
        if len(self) == 0:
            return np.zeros(found.shape[0], np.bool_)
        at = np.minimum(np.searchsorted(self.hashes, found), self.hashes.shape[0] - 1)
        return np.asarray(self.hashes[at] == found)

    def common_mask(
        self, token_ids: ArrayLike, contexts: NDArray[np.int64] | None = None
    ) -> NDArray[np.bool_]:
        """True where a position's (context, token) pair is in the table (``contexts``: the
        text's ``build_contexts`` at the table's width, when the caller has them)."""
        ids = as_token_array(token_ids)
        if len(self) == 0 or ids.shape[0] == 0:
            return np.zeros(ids.shape[0], np.bool_)
        if ids.shape[0] >= COMPILED_FROM:
            from detector.core import compiled

            return self.contains(compiled.gram_hashes(ids, self.width)[1])
        return self.contains(fingerprints(ids, self.width, contexts))

    def save(self, path: str | Path) -> None:
        """Write the table: its fingerprints as LZMA-compressed gaps (sorted 32-bit values
        leave gaps of ~log2(2**32 / n) bits, about 1.7 bytes an entry for 2 M entries)."""
        gaps = np.diff(self.hashes, prepend=np.uint32(0)).astype("<u4")
        header = {**self.meta, "width": self.width, "tokenizer_hash": self.tokenizer_hash}
        np.savez(
            path,
            gaps=np.frombuffer(lzma.compress(gaps.tobytes(), preset=9), np.uint8),
            header=np.frombuffer(json.dumps(header).encode(), np.uint8),
        )

    @classmethod
    def load(cls, path: str | Path) -> NgramTable:
        with np.load(path) as data:
            header = json.loads(bytes(data["header"]).decode())
            gaps = np.frombuffer(lzma.decompress(bytes(data["gaps"])), "<u4")
        hashes = np.cumsum(gaps, dtype=np.uint32)
        width, tokenizer = header.pop("width"), header.pop("tokenizer_hash")
        return cls(hashes=hashes, width=int(width), tokenizer_hash=tokenizer, meta=header)


def applied_hash(table: NgramTable | None, context_width: int) -> str | None:
    """Content hash of the table that filters a key of ``context_width`` (what a signed
    report names), None when none applies (no table, or one of another width)."""
    return table.content_hash if table is not None and table.applies_to(context_width) else None


def document_counts(
    documents: Iterable[ArrayLike], width: int = 4
) -> tuple[NDArray[np.uint32], NDArray[np.int64]]:
    """Distinct fingerprints of ``documents`` and how many documents hold each."""
    per_doc = [np.unique(fingerprints(d, width)) for d in documents]
    if not per_doc:
        return np.zeros(0, np.uint32), np.zeros(0, np.int64)
    return np.unique(np.concatenate(per_doc), return_counts=True)


def build_table(
    documents: Iterable[ArrayLike],
    *,
    width: int = 4,
    min_docs: int = 2,
    tokenizer_hash: str | None = None,
) -> NgramTable:
    """The pairs found in at least ``min_docs`` of ``documents`` (token id sequences)."""
    if min_docs < 1:
        raise ValueError("min_docs must be at least 1")
    hashes, counts = document_counts(documents, width)
    return NgramTable(hashes[counts >= min_docs], width, tokenizer_hash)


# --- shipped tables: one per tokenizer, found by the tokenizer's content hash ---------------

TABLE_DIR = Path(__file__).resolve().parent / "ngram_tables"
INDEX = "index.json"


def shipped_index() -> dict[str, dict[str, Any]]:
    """Tokenizer content hash -> its table's entry (file, sources, size, build date)."""
    path = TABLE_DIR / INDEX
    return json.loads(path.read_text()) if path.is_file() else {}


@functools.lru_cache(maxsize=8)
def table_for(tokenizer_hash: str | None) -> NgramTable | None:
    """The shipped table of the tokenizer with this content hash, or None when it has none."""
    entry = shipped_index().get(tokenizer_hash or "")
    return NgramTable.load(TABLE_DIR / entry["file"]) if entry else None
