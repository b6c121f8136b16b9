"""A reading that needs no model: an interpolated trigram model of a tokenizer's vocabulary,
counted from the human text the shipped n-gram tables are built from
(``detector.text.ngram_sources``: Debian documentation and licences, installed Python
packages and C headers, APT and dpkg stanzas; never the standard library nor the held-out
packages the false-positive benchmarks read).

Per token ``x`` after ``(b, c)`` the model gives ``q_x`` by absolute discounting
(``DISCOUNT``), the trigram's counts interpolated with the bigram's, the bigram's with the
add-half unigram's. The reading is ``ModelReading``'s: ``observed = f(max(q_x, FLOOR))``,
``f(q) = psi(1 + 1/q) + gamma_E``, so the weighted test's observed-token weights
``min(f - 1, cap)`` make a token the counts find (nearly) certain weigh little and every
other token about as much as the Gamma sum weighs it. ``FLOOR`` lies above the weighted
test's ``SUSPECT_PROBABILITY``: a trigram model finds many a human token that rare, so it
suspects no edits. ``expected`` is ``E[s]`` under the bigram distribution of the token's
context (its seen continuations exactly, the unigram back-off as one entropy term), beside
the reading only: the observed weights decide.

The reading is a function of the token ids alone (no key), so the weighted test stays exact
under the null whatever the counts; what it buys is measured by ``benchmarks/bench_readings.py``
(docs/benchmarks-power.md). Temperature and top-p are not applied (the counts are not the
generator's distribution).

The counts are built once per tokenizer into the data directory
(``data_dir()/reading/ngram-<tokenizer hash>.npz``, about ``BUILD_CHARS`` characters of
each genre, a few minutes of one core) and stamped with ``RECIPE``.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import digamma

from detector.core.contexts import as_token_array
from detector.evidence.power import EULER_GAMMA
from detector.paths import data_dir
from detector.reading.model import ModelReading

RECIPE = 1
DISCOUNT = 0.75
FLOOR = 1e-3  # q_x below it reads as FLOOR (above SUSPECT_PROBABILITY: no suspected edits)
BUILD_CHARS = 20_000_000  # per genre, spread evenly over its documents
MIN_TRIGRAM = 2  # trigrams seen fewer times are dropped (the bigram speaks for them)


def _f(q: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.clip(digamma(1.0 + 1.0 / q) + EULER_GAMMA, 1.0, None)


def _g(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """``q (psi(1 + 1/q) + gamma_E - 1)``: one token's share of ``E[s] - 1``."""
    return q * (digamma(1.0 + 1.0 / q) + EULER_GAMMA - 1.0)


def _counts(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    u, c = np.unique(keys, return_counts=True)
    return u, c.astype(np.int64)


class NgramReading:
    """The trigram reading of one tokenizer's ids (``read`` as ``ModelAssist.read``)."""

    name = "ngram"

    def __init__(self, path: str | Path) -> None:
        with np.load(path) as z:
            self._setup({k: z[k] for k in z.files})

    @classmethod
    def from_counts(cls, counts: dict[str, NDArray[Any]]) -> NgramReading:
        """The reading of ``count_ngrams``'s arrays, without a file."""
        self = cls.__new__(cls)
        self._setup(counts)
        return self

    def _setup(self, z: dict[str, NDArray[Any]]) -> None:
        self.vocab_size = int(z["vocab_size"])
        self.unigram = z["unigram"]  # [V] probabilities
        self.bi_keys, self.bi_counts = z["bi_keys"], z["bi_counts"]
        self.tri_keys, self.tri_counts = z["tri_keys"], z["tri_counts"]
        self.bi_ctx, self.bi_start, self.bi_total = self._contexts(self.bi_keys, self.bi_counts)
        self.tri_ctx, self.tri_start, self.tri_total = self._contexts(
            self.tri_keys, self.tri_counts
        )
        p = self.unigram
        self.unigram_entropy = float(-(p * np.log(p)).sum())

    def __repr__(self) -> str:
        return f"<NgramReading V={self.vocab_size} bigrams={self.bi_keys.size}>"

    def _contexts(
        self, keys: NDArray[np.int64], counts: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """Each context's key (``keys // V``), the index of its first continuation and its
        total count; the continuations of context i are ``[start[i], start[i + 1])``."""
        ctx = keys // self.vocab_size
        first = np.flatnonzero(np.r_[True, ctx[1:] != ctx[:-1]]) if ctx.size else ctx
        total = np.add.reduceat(counts, first) if ctx.size else counts
        return ctx[first], np.r_[first, ctx.size].astype(np.int64), total

    def _level(
        self,
        ctx_keys: NDArray[np.int64],
        targets: NDArray[np.int64],
        lower: NDArray[np.float64],
        which: str,
    ) -> NDArray[np.float64]:
        """Interpolated probability of ``targets`` after ``ctx_keys`` at one order, over
        ``lower`` (the next lower order's); ``lower`` where the context was never seen."""
        ctx, start, total = getattr(self, f"{which}_ctx"), getattr(self, f"{which}_start"), None
        total = getattr(self, f"{which}_total")
        keys, counts = getattr(self, f"{which}_keys"), getattr(self, f"{which}_counts")
        i = np.searchsorted(ctx, ctx_keys)
        i = np.minimum(i, max(ctx.size - 1, 0))
        seen = ctx.size > 0 and (ctx[i] == ctx_keys)
        out = lower.copy()
        if not np.any(seen):
            return out
        i = i[seen]
        n = total[i].astype(np.float64)
        types = (start[i + 1] - start[i]).astype(np.float64)
        full = ctx_keys[seen] * self.vocab_size + targets[seen]
        j = np.minimum(np.searchsorted(keys, full), keys.size - 1)
        c = np.where(keys[j] == full, counts[j], 0).astype(np.float64)
        out[seen] = np.maximum(c - DISCOUNT, 0.0) / n + DISCOUNT * types / n * lower[seen]
        return out

    def probabilities(self, ids: ArrayLike) -> NDArray[np.float64]:
        """``q_x`` of every token after the two before it (token 0 by the unigram)."""
        x = as_token_array(ids)
        if x.size and (x.min() < 0 or x.max() >= self.vocab_size):
            raise ValueError(f"token ids must lie in [0, {self.vocab_size})")
        q = self.unigram[x].astype(np.float64)
        if x.size > 1:
            q[1:] = self._level(x[:-1], x[1:], q[1:], "bi")
        if x.size > 2:
            tri_ctx = x[:-2] * self.vocab_size + x[1:-1]
            q[2:] = self._level(tri_ctx, x[2:], q[2:], "tri")
        return q

    def _expected(self, x: NDArray[np.int64]) -> NDArray[np.float64]:
        """``E[s]`` under each position's bigram distribution (1 at token 0)."""
        out = np.ones(x.size, np.float64)
        for t in range(1, x.size):
            c = int(x[t - 1])
            i = int(np.searchsorted(self.bi_ctx, c))
            if i >= self.bi_ctx.size or self.bi_ctx[i] != c:
                continue
            lo, hi = int(self.bi_start[i]), int(self.bi_start[i + 1])
            n = float(self.bi_total[i])
            beta = DISCOUNT * (hi - lo) / n
            nxt = self.bi_keys[lo:hi] % self.vocab_size
            q = (self.bi_counts[lo:hi] - DISCOUNT) / n + beta * self.unigram[nxt]
            tail = beta * (-np.log(beta) + self.unigram_entropy) + (EULER_GAMMA - 1.0) * beta
            out[t] = 1.0 + max(0.0, float(_g(q).sum()) + tail)
        return out

    def read(
        self,
        docs: Sequence[ArrayLike],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        expected: bool = True,
    ) -> list[ModelReading]:
        """The reading of every document (``ModelAssist.read``'s shape); ``temperature`` and
        ``top_p`` are checked, not applied."""
        if not temperature > 0:
            raise ValueError("temperature must be positive (greedy text carries no watermark)")
        if not 0 < top_p <= 1:
            raise ValueError("top_p must lie in (0, 1]")
        out = []
        for d in docs:
            x = as_token_array(d)
            observed = _f(np.maximum(self.probabilities(x), FLOOR))
            e = self._expected(x) if expected else np.ones(x.size)
            out.append(ModelReading(e, observed))
        return out

    def expected_scores(
        self, docs: Sequence[ArrayLike], *, temperature: float = 1.0, top_p: float = 1.0
    ) -> list[NDArray[np.float64]]:
        return [r.expected for r in self.read(docs, temperature=temperature, top_p=top_p)]


def _spread(docs: list[str], chars: int) -> list[str]:
    """Every k-th document, k chosen so that about ``chars`` characters are kept."""
    total = sum(len(d) for d in docs)
    step = max(1, round(total / max(chars, 1)))
    return docs[::step]


def count_ngrams(docs: Iterable[ArrayLike], vocab_size: int) -> dict[str, NDArray[Any]]:
    """The counts file's arrays from tokenized documents (no n-gram crosses two of them):
    add-half unigram probabilities, every bigram's count, the count of every trigram seen at
    least ``MIN_TRIGRAM`` times, keys ``c * V + x`` and ``(b * V + c) * V + x`` sorted."""
    v = int(vocab_size)
    uni = np.zeros(v, np.int64)
    bi: list[NDArray[np.int64]] = [np.zeros(0, np.int64)]
    tri: list[NDArray[np.int64]] = [np.zeros(0, np.int64)]
    for d in docs:
        x = as_token_array(d)
        uni += np.bincount(x, minlength=v)[:v]
        if x.size > 1:
            bi.append(x[:-1] * v + x[1:])
        if x.size > 2:
            tri.append((x[:-2] * v + x[1:-1]) * v + x[2:])
    bk, bc = _counts(np.concatenate(bi))
    tk, tc = _counts(np.concatenate(tri))
    keep = tc >= MIN_TRIGRAM
    return {
        "vocab_size": np.array(v),
        "unigram": (uni + 0.5) / (uni.sum() + 0.5 * v),
        "bi_keys": bk,
        "bi_counts": bc.astype(np.uint32),
        "tri_keys": tk[keep],
        "tri_counts": tc[keep].astype(np.uint32),
        "tokens": np.array(int(uni.sum())),
    }


def build_counts(tokenizer: Any, chars: int = BUILD_CHARS) -> dict[str, NDArray[Any]]:
    """``count_ngrams`` of about ``chars`` characters of each genre of
    ``detector.text.ngram_sources``, tokenized by ``tokenizer``."""
    from detector.text.ngram_sources import GENRES, table_documents

    docs = (
        tokenizer.encode(text)
        for genre in GENRES
        for text in _spread(table_documents(genre), chars)
    )
    return count_ngrams(docs, tokenizer.vocab_size)


def counts_path(tokenizer: Any) -> Path:
    return data_dir() / "reading" / f"ngram-{tokenizer.content_hash[:16]}.npz"


def ensure_counts(tokenizer: Any) -> Path:
    """The tokenizer's counts file, built now unless it is there with this ``RECIPE``."""
    path = counts_path(tokenizer)
    stamp = path.with_suffix(".json")
    want = {"recipe": RECIPE, "build_chars": BUILD_CHARS, "min_trigram": MIN_TRIGRAM}
    if path.is_file() and stamp.is_file() and json.loads(stamp.read_text()).get("recipe") == RECIPE:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.process_time()
    counts = build_counts(tokenizer)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, **counts)  # type: ignore[arg-type]
    tmp.replace(path)
    want |= {"tokens": int(counts["tokens"]), "cpu_seconds": round(time.process_time() - t0)}
    stamp.write_text(json.dumps(want, indent=1) + "\n")
    return path


@functools.lru_cache(maxsize=2)
def load_ngram_reading(tokenizer_source: str | None = None) -> NgramReading:
    """One ``NgramReading`` per tokenizer and process (``None``: the embedded default's)."""
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer(tokenizer_source) if tokenizer_source else load_tokenizer()
    return NgramReading(ensure_counts(tok))
