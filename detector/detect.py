"""Detection entry points: ``detect_ids`` for token ids, ``detect_text`` for text.

Scoring follows spec section 3: contexts from the text itself, first occurrence of each
context scored, ``s = -log(1 - u)`` in float64, Gamma(n, 1) survival p-value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector import scoring
from detector.config import KeyConfig, as_key_config
from detector.contexts import as_token_array, build_contexts, dedup_mask
from detector.stats import CORRECTIONS, dual_key_sf, gamma_sf


@dataclass(frozen=True)
class Detection:
    """The test of one text under one key."""

    score: float
    p_value: float
    log10_p: float
    num_tokens: int
    num_scored_tokens: int
    is_watermarked: bool
    token_scores: NDArray[np.float64] = field(repr=False)  # [num_tokens], 0.0 where not scored
    scored_mask: NDArray[np.bool_] = field(repr=False)  # [num_tokens]

    def summary(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "p_value": self.p_value,
            "log10_p": self.log10_p,
            "num_tokens": self.num_tokens,
            "num_scored_tokens": self.num_scored_tokens,
            "is_watermarked": self.is_watermarked,
        }


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold < 1.0:
        raise ValueError("threshold must lie in (0, 1)")


def _scored_mask(ids: NDArray[np.int64], config: KeyConfig) -> tuple[NDArray, NDArray[np.bool_]]:
    contexts = build_contexts(ids, config.context_width)
    if config.deduplicate:
        return contexts, dedup_mask(contexts, config.max_history)
    return contexts, np.ones(ids.shape[0], np.bool_)


def _verdict(
    ids: NDArray[np.int64],
    mask: NDArray[np.bool_],
    scores: NDArray[np.float64],
    config: KeyConfig,
    threshold: float,
) -> Detection:
    n = int(mask.sum())
    total = float(scores.sum())
    if config.algorithm == "dual_key_gumbel":
        p_value, log10_p = dual_key_sf(total, n, config.alpha)
    else:
        p_value, log10_p = gamma_sf(total, n)
    return Detection(
        score=total,
        p_value=p_value,
        log10_p=log10_p,
        num_tokens=int(ids.shape[0]),
        num_scored_tokens=n,
        is_watermarked=bool(n > 0 and log10_p <= math.log10(threshold)),
        token_scores=scores,
        scored_mask=mask,
    )


def detect_config(token_ids: ArrayLike, config: KeyConfig, threshold: float = 0.01) -> Detection:
    """Test ``token_ids`` under one key configuration."""
    return detect_batch([token_ids], [config], threshold)[0]


def detect_batch(
    docs: Sequence[ArrayLike], configs: Sequence[KeyConfig], threshold: float = 0.01
) -> list[Detection]:
    """Test document i under ``configs[i]``. On CUDA, all scores come from one kernel launch
    per distinct (width, algorithm, alpha); on the CPU, numpy scores only the scored positions.
    """
    _check_threshold(threshold)
    if len(docs) != len(configs):
        raise ValueError("one configuration per document is needed")
    arrays = [as_token_array(d) for d in docs]
    memo: dict[tuple[int, int, bool, int | None], tuple[NDArray, NDArray[np.bool_]]] = {}
    masks = []  # contexts and mask, shared by configurations that test one text alike
    for ids, c in zip(arrays, configs, strict=True):
        tag = (id(ids), c.context_width, c.deduplicate, c.max_history)
        if tag not in memo:
            memo[tag] = _scored_mask(ids, c)
        masks.append(memo[tag])
    if scoring.cuda_available() and arrays:
        full = _gpu_scores(arrays, configs)
        scores = [np.where(m, s, 0.0) for (_, m), s in zip(masks, full, strict=True)]
    else:
        scores = [
            _cpu_scores(ids, ctx, m, c)
            for ids, (ctx, m), c in zip(arrays, masks, configs, strict=True)
        ]
    return [
        _verdict(ids, m, s, c, threshold)
        for ids, (_, m), s, c in zip(arrays, masks, scores, configs, strict=True)
    ]


def _cpu_scores(ids: NDArray, contexts: NDArray, mask: NDArray, config: KeyConfig) -> NDArray:
    scores = np.zeros(ids.shape[0], np.float64)
    if mask.any():
        scores[mask] = scoring.config_scores(config, contexts[mask], ids[mask])
    return scores


def _gpu_scores(arrays: list[NDArray], configs: Sequence[KeyConfig]) -> list[NDArray]:
    out: list[NDArray] = [np.zeros(0)] * len(arrays)
    groups: dict[tuple[int, str, float], list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault((c.context_width, c.algorithm, c.alpha), []).append(i)
    for (width, algorithm, alpha), members in groups.items():
        got = scoring.kernel_scores(
            [arrays[i] for i in members],
            [configs[i].key for i in members],
            context_width=width,
            algorithm=algorithm,
            alpha=alpha,
        )
        for i, s in zip(members, got, strict=True):
            out[i] = s
    return out


def detect_ids(
    token_ids: ArrayLike,
    key: int,
    *,
    context_width: int = 4,
    deduplicate: bool = True,
    algorithm: str = "gumbel",
    alpha: float = 0.1,
    threshold: float = 0.01,
) -> Detection:
    """Test token ids (the generating model's tokenizer, no special tokens) under ``key``."""
    config = KeyConfig(
        key=key,
        algorithm=algorithm,  # type: ignore[arg-type]
        context_width=context_width,
        alpha=alpha,
        deduplicate_contexts="single_turn" if deduplicate else "none",
        deduplicate_contexts_max_history=None,  # a bare key: repeats searched over the whole text
    )
    return detect_config(token_ids, config, threshold)


@dataclass(frozen=True)
class Hypothesis:
    """One tested key configuration and its result; ``adjusted_log10_p`` is family-corrected."""

    index: int
    name: str | None
    detection: Detection
    adjusted_log10_p: float


@dataclass(frozen=True)
class TextDetection:
    hypotheses: tuple[Hypothesis, ...]
    num_hypotheses: int
    correction: str
    threshold: float
    is_watermarked: bool
    best: int | None  # index of the hypothesis with the smallest corrected p-value
    p_value: float
    log10_p: float
    token_ids: NDArray[np.int64] = field(repr=False)
    tokenizer_hash: str | None = None
    _encoding: Any = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def offsets(self) -> NDArray[np.int64]:
        """``[n, 2]`` character offsets of every token (computed on first use)."""
        from detector.tokenizers import offsets_of

        return offsets_of(self._encoding)


def correct(log10_ps: Sequence[float], correction: str = "holm") -> NDArray[np.float64]:
    """Family-wise corrected log10 p-values (``holm`` or ``bonferroni``)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; expected one of {list(CORRECTIONS)}")
    return CORRECTIONS[correction](np.asarray(log10_ps, np.float64))


def combine(
    detections: Sequence[Detection],
    *,
    threshold: float = 0.01,
    correction: str = "holm",
) -> tuple[NDArray[np.float64], int | None, bool]:
    """Correct a family of detections: (adjusted log10 ps, best index, family verdict)."""
    _check_threshold(threshold)
    adjusted = correct([d.log10_p for d in detections], correction)
    if adjusted.size == 0:
        return adjusted, None, False
    best = int(np.argmin(adjusted))
    scored = detections[best].num_scored_tokens > 0
    return adjusted, best, bool(scored and adjusted[best] <= math.log10(threshold))


def detect_text(
    text: str,
    tokenizer: Any,
    keys: Sequence[int | KeyConfig] | int | KeyConfig,
    *,
    threshold: float = 0.01,
    correction: str = "holm",
) -> TextDetection:
    """Tokenize ``text`` once and test every key configuration, correcting for their number."""
    from detector.tokenizers import as_tokenizer

    if not isinstance(text, str):
        raise ValueError("text must be a str")
    if isinstance(keys, (int, KeyConfig)):
        keys = [keys]
    configs = [as_key_config(k) for k in keys]
    if not configs:
        raise ValueError("at least one key is needed")
    tok = as_tokenizer(tokenizer)
    ids, encoding = tok.encode_lazy(text)
    detections = detect_batch([ids] * len(configs), configs, threshold)
    adjusted, best, verdict = combine(detections, threshold=threshold, correction=correction)
    hypotheses = tuple(
        Hypothesis(i, c.name, d, float(a))
        for i, (c, d, a) in enumerate(zip(configs, detections, adjusted, strict=True))
    )
    best_lp = float(adjusted[best]) if best is not None else 0.0
    return TextDetection(
        hypotheses=hypotheses,
        num_hypotheses=len(hypotheses),
        correction=correction,
        threshold=threshold,
        is_watermarked=verdict,
        best=best,
        p_value=10.0**best_lp,
        log10_p=best_lp,
        token_ids=ids,
        tokenizer_hash=tok.content_hash,
        _encoding=encoding,
    )
