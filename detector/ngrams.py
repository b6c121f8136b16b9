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
least ``min_docs`` distinct documents. Membership goes through a hash index built once per
table (O(1) per token).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector.contexts import as_token_array, build_contexts

_M1 = np.uint64(0xBF58476D1CE4E5B9)  # splitmix64's finaliser constants
_M2 = np.uint64(0x94D049BB133111EB)
_TOKEN_TAG = np.uint64(1 << 40)  # keeps the token's word apart from the context's


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def gram_hashes(token_ids: ArrayLike, width: int = 4) -> NDArray[np.uint64]:
    """``[n]`` keyless hashes of every position's (context, token) pair."""
    ids = as_token_array(token_ids)
    contexts = build_contexts(ids, width)  # [n, width]
    with np.errstate(over="ignore"):
        h = np.full(ids.shape[0], np.uint64(width), np.uint64)
        for j in range(width):
            h = _mix(h ^ (contexts[:, j] + 1).astype(np.uint64))
        return _mix(h ^ (ids.astype(np.uint64) + _TOKEN_TAG))


@dataclass(frozen=True)
class NgramTable:
    """Pairs to skip: sorted unique hashes for one tokenizer and context width."""

    hashes: NDArray[np.uint64] = field(repr=False)
    width: int = 4
    tokenizer_hash: str | None = None

    def __len__(self) -> int:
        return int(self.hashes.shape[0])

    @functools.cached_property
    def _index(self):  # pandas' hash table: O(1) look-ups, built once
        import pandas as pd

        return pd.Index(self.hashes, copy=False)

    def common_mask(self, token_ids: ArrayLike) -> NDArray[np.bool_]:
        """True where a position's (context, token) pair is in the table."""
        ids = as_token_array(token_ids)
        if len(self) == 0 or ids.shape[0] == 0:
            return np.zeros(ids.shape[0], np.bool_)
        return self._index.get_indexer(gram_hashes(ids, self.width)) >= 0

    def save(self, path: str | Path) -> None:
        np.savez_compressed(
            path, hashes=self.hashes, width=self.width, tokenizer=self.tokenizer_hash or ""
        )

    @classmethod
    def load(cls, path: str | Path) -> NgramTable:
        with np.load(path) as data:
            return cls(
                hashes=np.asarray(data["hashes"], np.uint64),
                width=int(data["width"]),
                tokenizer_hash=str(data["tokenizer"]) or None,
            )


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
    per_doc = [np.unique(gram_hashes(d, width)) for d in documents]
    if not per_doc:
        return NgramTable(np.zeros(0, np.uint64), width, tokenizer_hash)
    hashes, counts = np.unique(np.concatenate(per_doc), return_counts=True)
    return NgramTable(hashes[counts >= min_docs], width, tokenizer_hash)
