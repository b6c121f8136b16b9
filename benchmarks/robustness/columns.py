"""The deployable columns: global, localized, the edit-robust statistic and, with a model,
the product's model-assisted decisions, on a text and on many."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks.robustness.common import HUMAN_AROUND, KEY, RUN, THRESHOLD, weighted_log_sf
from detector.core.config import as_key_config


def expected_of(docs: list[np.ndarray]) -> list[Any]:
    """The model's reading (``detector.reading.model.ModelReading``: ``E[s]`` and the observed
    token's ``f(q_x)``) of every token of every text, as the product reads it (T=1), cached:
    the keys share them."""
    cache = RUN.cache
    missing = [d for d in docs if d.tobytes() not in cache]
    for d, read in zip(missing, RUN.assist.read(missing), strict=True):
        cache[d.tobytes()] = read
    return [cache[d.tobytes()] for d in docs]


def decisions(ids: np.ndarray, key: int = KEY, expected: Any = None) -> tuple:
    """At THRESHOLD under the benchmark key: the global test, the localized decision, the
    edit-robust statistic alone (``benchmarks.research.robust``) and the three combined
    (Bonferroni).
    With the model's reading ``expected`` (a ``ModelReading``), also: the weighted test alone
    and the product's assisted decision (Gamma and weighted, Bonferroni x2), both on the
    product's observed-token weights, the weighted edit-robust test
    (``benchmarks.research.robust_weighted``, on ``E[s]``) alone, and Gamma, weighted and weighted
    edit-robust combined (Bonferroni x3)."""
    from benchmarks.research.robust import robust_scores_log10_p
    from benchmarks.research.robust_weighted import weighted_robust_test
    from detector.decision.family import decision_log10_p
    from detector.decision.rule import flags
    from detector.evidence.detection import detect_config
    from detector.evidence.localize import exp_scores, localize_ids
    from detector.evidence.weighted import observed_weights

    config = as_key_config(key)
    loc = localize_ids(ids, key, threshold=THRESHOLD)
    scores = exp_scores(loc.detection, config)
    _, robust_lp = robust_scores_log10_p(scores)
    level = np.log10(THRESHOLD)
    combined = min(loc.global_log10_p, loc.scan_log10_p, robust_lp) + np.log10(3.0)
    out = (
        loc.detection.log10_p <= level,
        flags(loc.log10_p, THRESHOLD, loc.detection.num_scored_tokens),
        robust_lp <= level,
        combined <= level,
    )
    if expected is None:
        return out
    det = detect_config(
        ids,
        config,
        THRESHOLD,
        expected_scores=expected.expected,
        observed_scores=expected.observed,
    )
    assert det.weighted is not None
    w = observed_weights(expected.observed)[det.scored_mask]
    unmasked = weighted_log_sf(w, float((w * scores).sum())) / math.log(10.0)
    wr = weighted_robust_test(scores, det.weighted.expected_scores)
    three = min(det.log10_p, det.weighted.log10_p, wr.log10_p) + np.log10(3.0)
    return out + (
        det.weighted.log10_p <= level,
        decision_log10_p(det) <= level,
        min(det.log10_p, unmasked) + np.log10(2.0) <= level,
        wr.log10_p <= level,
        three <= level,
        min(loc.log10_p, det.weighted.log10_p) + np.log10(2.0) <= level,
    )


def decision_matrix(docs: list[np.ndarray], key: int = KEY) -> np.ndarray:
    """``decisions`` of every text: ``[len(docs), len(RUN.columns)]`` booleans."""
    expected: list[np.ndarray | None] = [None] * len(docs)
    if RUN.assist is not None:
        expected = list(expected_of(docs))
    got = [decisions(d, key, e) for d, e in zip(docs, expected, strict=True)]
    return np.array(got, bool).reshape(-1, len(RUN.columns))


def rates(docs: list[np.ndarray], key: int = KEY) -> tuple[float, ...]:
    return tuple(float(v) for v in decision_matrix(docs, key).mean(0))


def human_fpr(
    human: np.ndarray, docs: int, keys: int, length: int = HUMAN_AROUND
) -> tuple[int, tuple[float, ...]]:
    """False-positive rates of every column on human-only prose of ``length`` tokens: ``docs``
    disjoint pieces, each tested under ``keys`` keys."""
    step = max(length, (human.shape[0] - length) // docs)
    pieces = [human[i : i + length] for i in range(0, human.shape[0] - length, step)]
    per_key = [rates(pieces[:docs], KEY + k) for k in range(keys)]
    return len(pieces[:docs]) * keys, tuple(float(v) for v in np.mean(per_key, axis=0))
