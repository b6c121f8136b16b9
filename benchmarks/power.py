"""The statistics bench_power compares, and the machinery that applies them to prefixes of
texts under one key or many.

A statistic is a function of one ``Sample`` (a text's prefix, its scored tokens' scores under
the key tested, the key, and a model's expected score ``E[s]`` of each token when a model read
the text) that decides "watermarked" at ``THRESHOLD``. Adding a statistic is one entry in
``STATISTICS`` (``MODEL_STATISTICS`` for those that need ``E[s]``). The contexts and
first-occurrence masks of each text are built once (``prepare``); the scores of a prefix are a
slice of the text's scores, because the first occurrence of a context inside a prefix is its
first occurrence in the text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

from detector.core.config import as_key_config
from detector.core.contexts import build_contexts, dedup_mask
from detector.core.scoring import token_scores
from detector.core.stats import gamma_sf
from detector.decision.family import flagged
from detector.evidence.detection import detect_ids
from detector.reading.model import ModelReading

PREFIXES = (50, 100, 200)
THRESHOLD = 0.01
LOG10_THRESHOLD = math.log10(THRESHOLD)
TAIL_U = 0.9  # the tail-count statistic counts scored tokens with u > TAIL_U


@dataclass
class Prepared:
    """One text: its token ids, contexts and scored mask, and its scores per key (cached)."""

    ids: NDArray[np.int64]
    contexts: NDArray[np.int64]  # [n, 4]
    mask: NDArray[np.bool_]  # [n] first occurrence of each context
    expected: NDArray[np.float64] | None = None  # [n] a model's E[s] (detector.reading.model)
    observed: NDArray[np.float64] | None = None  # [n] its observed scores f(q_x)
    _scores: dict[int, NDArray[np.float64]] = field(default_factory=dict, repr=False)

    def scores(self, key: int) -> NDArray[np.float64]:
        """``[n]`` scores under ``key``, 0 where a position is not scored."""
        if key not in self._scores:
            full = np.zeros(self.ids.shape[0], np.float64)
            full[self.mask] = token_scores(key, self.contexts[self.mask], self.ids[self.mask])
            self._scores = {key: full}  # one key at a time: keeps memory flat over many keys
        return self._scores[key]


@dataclass(frozen=True)
class Sample:
    """The first ``length`` tokens of a prepared text under ``key``."""

    text: Prepared
    length: int
    key: int

    @property
    def ids(self) -> NDArray[np.int64]:
        return self.text.ids[: self.length]

    @property
    def scores(self) -> NDArray[np.float64]:
        """Scores of the scored tokens of the prefix (Exp(1) i.i.d. under the null)."""
        return self.text.scores(self.key)[: self.length][self.text.mask[: self.length]]

    @property
    def expected(self) -> NDArray[np.float64]:
        """The model's ``E[s]`` of every token of the prefix: a slice of the text's, since a
        causal model's prediction of a token depends only on the tokens before it."""
        if self.text.expected is None:
            raise ValueError("no model read this text")
        return self.text.expected[: self.length]

    @property
    def observed(self) -> NDArray[np.float64]:
        """The model's observed score ``f(q_x)`` of every token of the prefix."""
        if self.text.observed is None:
            raise ValueError("no model read this text")
        return self.text.observed[: self.length]


Statistic = Callable[[Sample], bool]


def gamma_log10_p(sample: Sample) -> float:
    """The sum of scores against Gamma(n, 1): vLLM's detector and this project's core test."""
    s = sample.scores
    return gamma_sf(float(s.sum()), s.size)[1]


def lower_tail_log10_p(sample: Sample) -> float:
    """The lower tail of ``sum(-log u)`` (Gamma(n, 1) under the null): a watermarked token's
    ``u`` is pushed towards 1, so ``-log u`` towards 0, and this statistic weighs the
    tokens with the largest ``u`` more than the sum of ``-log(1 - u)`` does."""
    s = sample.scores
    if s.size == 0:
        return 0.0
    v = -np.log(-np.expm1(-s))  # -log u, with u = 1 - exp(-s)
    return math.log10(max(float(special.gammainc(s.size, float(v.sum()))), 1e-300))


def tail_count_log10_p(sample: Sample) -> float:
    """How many scored tokens have ``u > TAIL_U``, against Binomial(n, 1 - TAIL_U): a
    truncated statistic that ignores by how much each score exceeds the cut."""
    s = sample.scores
    k = int((s > -math.log1p(-TAIL_U)).sum())
    return float(stats.binom.logsf(k - 1, s.size, 1.0 - TAIL_U)) / math.log(10.0)


def _at_threshold(log10_p: Callable[[Sample], float]) -> Statistic:
    return lambda sample: sample.scores.size > 0 and log10_p(sample) <= LOG10_THRESHOLD


def gamma_or_lower(sample: Sample) -> bool:
    """Either of the two Gamma tests, Bonferroni-corrected (each at THRESHOLD / 2)."""
    if sample.scores.size == 0:
        return False
    best = min(gamma_log10_p(sample), lower_tail_log10_p(sample))
    return best <= LOG10_THRESHOLD - math.log10(2.0)


def default_decision(sample: Sample) -> bool:
    """What the library decides without a model on one key's Gamma test:
    ``flagged(detect_ids(...))`` (``detector.decision.family``)."""
    return flagged(detect_ids(sample.ids, sample.key, threshold=THRESHOLD))


def weighted_log10_p(sample: Sample) -> float:
    """The model-assisted weighted sum ``sum w_t s_t`` with the library's observed-token
    weights ``w_t = min(f(q_x) - 1, cap)``, 0 on suspected edits (``detector.reading.model``),
    against its exact null tail (``detector.evidence.weighted``)."""
    from detector.evidence.weighted import observed_weights, weighted_sf

    width = as_key_config(sample.key).context_width
    w = observed_weights(sample.observed, width)[sample.text.mask[: sample.length]]
    return weighted_sf(w, float((w * sample.scores).sum()))[1]


def weighted_es_log10_p(sample: Sample) -> float:
    """The weighted sum with the weights ``w_t = E[s_t] - 1`` (the default before
    2026-12-01), against its exact null tail."""
    from detector.evidence.weighted import weighted_sf

    w = np.maximum(sample.expected[sample.text.mask[: sample.length]] - 1.0, 0.0)
    return weighted_sf(w, float((w * sample.scores).sum()))[1]


def assisted_decision(sample: Sample) -> bool:
    """What the library decides when a model read the text: ``flagged(detect_ids(...,
    expected_scores=..., observed_scores=...))`` (the Gamma and weighted tests,
    corrected)."""
    found = detect_ids(
        sample.ids,
        sample.key,
        threshold=THRESHOLD,
        expected_scores=sample.expected,
        observed_scores=sample.observed,
    )
    return flagged(found)


def assisted_es_decision(sample: Sample) -> bool:
    """The model-assisted decision with ``E[s] - 1`` weights: ``flagged(detect_ids(...,
    expected_scores=...))`` without observed scores."""
    found = detect_ids(sample.ids, sample.key, threshold=THRESHOLD, expected_scores=sample.expected)
    return flagged(found)


STATISTICS: dict[str, Statistic] = {
    "gamma sum": _at_threshold(gamma_log10_p),
    "lower tail": _at_threshold(lower_tail_log10_p),
    f"tail count u>{TAIL_U}": _at_threshold(tail_count_log10_p),
    "gamma or lower (Bonferroni)": gamma_or_lower,
    "default": default_decision,
    "weighted": _at_threshold(weighted_log10_p),
    "model-assisted": assisted_decision,
    "weighted E[s]-1": _at_threshold(weighted_es_log10_p),
    "model-assisted E[s]-1": assisted_es_decision,
}
MODEL_STATISTICS = frozenset(
    {"weighted", "model-assisted", "weighted E[s]-1", "model-assisted E[s]-1"}
)


def available(texts: Sequence[Prepared]) -> list[str]:
    """The statistics that apply to all of ``texts`` (those needing ``E[s]`` only when a
    model read every text)."""
    read = bool(texts) and all(t.expected is not None for t in texts)
    return [s for s in STATISTICS if read or s not in MODEL_STATISTICS]


def prepare(
    texts: Sequence[NDArray[np.int64]],
    readings: Sequence[ModelReading] | None = None,
    width: int = 4,
) -> list[Prepared]:
    """Contexts and masks of each text, with the model's reading of each when given."""
    out = []
    for i, ids in enumerate(texts):
        ids = np.asarray(ids, np.int64)
        contexts = build_contexts(ids, width)
        e = o = None
        if readings is not None:
            e = np.asarray(readings[i].expected, np.float64)
            o = np.asarray(readings[i].observed, np.float64)
        out.append(Prepared(ids, contexts, dedup_mask(contexts), e, o))
    return out


def detection_rates(texts: Sequence[Prepared], statistic: str, key: int) -> dict[int, float]:
    """Share of texts the statistic flags after each prefix length (a text shorter than the
    prefix is tested whole)."""
    decide = STATISTICS[statistic]
    return {
        n: float(np.mean([decide(Sample(t, n, key)) for t in texts])) if texts else math.nan
        for n in PREFIXES
    }


def key_dispersion(
    texts: Sequence[Prepared], statistic: str, keys: Sequence[int], length: int = PREFIXES[-1]
) -> NDArray[np.int64]:
    """Texts flagged under each key (first ``length`` tokens): binomial across keys when the
    tests of different texts are independent; over-dispersed when texts share pairs."""
    decide = STATISTICS[statistic]
    counts = np.zeros(len(keys), np.int64)
    for k, key in enumerate(keys):
        counts[k] = sum(decide(Sample(t, length, int(key))) for t in texts)
    return counts
