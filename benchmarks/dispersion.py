"""Held-out human corpora in three genres for the per-key dispersion measurement
(benchmarks/bench_dispersion.py and tests/detector/text/test_ngrams.py).

None of these documents is a source of the shipped n-gram tables (detector/text/ngram_sources.py):
prose is the standard library's docstrings, code its modules, and templated text the dpkg status
stanzas and APT ``Packages`` stanzas of the packages ``evaluation_package`` holds out."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np

from detector.core.contexts import build_contexts, dedup_mask
from detector.core.scoring import token_scores
from detector.core.stats import gamma_sf
from detector.text.corpora import docstrings as _docstrings
from detector.text.ngram_sources import _apt_lists, _package_name, dpkg_stanzas, evaluation_package
from detector.text.ngram_sources import stanzas as split_stanzas
from detector.text.ngrams import NgramTable, build_table

STDLIB = Path(sysconfig.get_paths()["stdlib"])
STANZAS_PER_DOCUMENT = 5


def _grouped(found: list[str]) -> list[str]:
    k = STANZAS_PER_DOCUMENT
    return ["\n\n".join(found[i : i + k]) for i in range(0, len(found), k)]


def apt_evaluation_stanzas(limit: int = 3000) -> list[str]:
    """APT stanzas of held-out packages, as they are, spread evenly over the lists."""
    found = [
        s
        for text in _apt_lists()
        for s in split_stanzas(text, strip=False)
        if evaluation_package(_package_name(s))
    ]
    step = max(1, len(found) // limit)
    return found[::step][:limit]


GENRES = ("prose", "code", "dpkg", "apt")


def genre_documents(genres: tuple[str, ...] = GENRES) -> dict[str, list[str]]:
    """Held-out documents of each of ``genres``, in a fixed order."""
    sources = {
        "prose": lambda: _docstrings(STDLIB),
        "code": lambda: [p.read_text(errors="replace") for p in sorted(STDLIB.glob("*.py"))],
        "dpkg": lambda: _grouped(dpkg_stanzas(evaluation=True)),
        "apt": lambda: _grouped(apt_evaluation_stanzas()),
    }
    return {g: sources[g]() for g in genres}


def chunks(docs: list[np.ndarray], size: int, limit: int) -> list[np.ndarray]:
    """Consecutive ``size``-token chunks of the concatenated documents, at most ``limit``."""
    ids = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    out = [ids[i : i + size] for i in range(0, ids.shape[0] - size + 1, size)]
    return out[:limit]


def split(tokenized: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(train, held out): odd documents build an in-genre table, even ones are tested."""
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
