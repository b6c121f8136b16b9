"""Human corpora in three genres, split into train and held-out halves, for the per-key
dispersion measurement (benchmarks/bench_dispersion.py and tests/detector/test_ngrams.py).

The documents are the product's (``detector.corpora``, which key calibration uses too): the
standard library's docstrings (prose) and modules (code), and dpkg's status file (templated
package stanzas)."""

from __future__ import annotations

import numpy as np

from detector.contexts import build_contexts, dedup_mask
from detector.corpora import DPKG_STATUS, STDLIB, genre_documents
from detector.ngrams import NgramTable, build_table
from detector.scoring import token_scores
from detector.stats import gamma_sf

__all__ = ["DPKG_STATUS", "STDLIB", "genre_documents"]  # the corpora live in the product


def chunks(docs: list[np.ndarray], size: int, limit: int) -> list[np.ndarray]:
    """Consecutive ``size``-token chunks of the concatenated documents, at most ``limit``."""
    ids = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    out = [ids[i : i + size] for i in range(0, ids.shape[0] - size + 1, size)]
    return out[:limit]


def split(tokenized: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(train, held out): odd documents build the table, even ones are tested."""
    return tokenized[1::2], tokenized[0::2]


def flag_counts(
    chunk_ids: list[np.ndarray], keys: np.ndarray, table: NgramTable | None, alpha: float = 0.01
) -> tuple[np.ndarray, float]:
    """Chunks flagged at ``alpha`` under each key, and the mean number of scored tokens."""
    prepared = []
    for ids in chunk_ids:
        contexts = build_contexts(ids, 4)
        mask = dedup_mask(contexts)
        if table is not None:
            mask &= ~table.common_mask(ids)
        prepared.append((contexts[mask], ids[mask]))
    counts = np.zeros(len(keys), np.int64)
    for k, key in enumerate(keys):
        for contexts, ids in prepared:
            if ids.shape[0]:
                _, log10_p = gamma_sf(float(token_scores(int(key), contexts, ids).sum()), ids.size)
                counts[k] += log10_p <= np.log10(alpha)
    return counts, float(np.mean([ids.shape[0] for _, ids in prepared]))


def dispersion(counts: np.ndarray) -> float:
    """Variance / mean of per-key flag counts (1 for independent tests)."""
    return float(counts.var(ddof=1) / max(counts.mean(), 1e-12))


def held_out_table(train: list[np.ndarray], min_docs: int = 2) -> NgramTable:
    return build_table(train, min_docs=min_docs)
