"""Detection entry points: ``detect_ids`` for token ids, ``detect_text`` for text.

Scoring follows spec section 3: contexts from the text itself, first occurrence of each
context scored, ``s = -log(1 - u)`` in float64, Gamma(n, 1) survival p-value.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector import prf
from detector.config import KeyConfig, as_key_config
from detector.contexts import as_token_array, build_contexts, dedup_mask
from detector.scoring import token_scores
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


def detect_config(token_ids: ArrayLike, config: KeyConfig, threshold: float = 0.01) -> Detection:
    """Test ``token_ids`` under one key configuration."""
    _check_threshold(threshold)
    ids = as_token_array(token_ids)
    contexts = build_contexts(ids, config.context_width)
    if config.deduplicate:
        mask = dedup_mask(contexts, config.max_history)
    else:
        mask = np.ones(ids.shape[0], np.bool_)
    scores = np.zeros(ids.shape[0], np.float64)
    if mask.any():
        scores[mask] = _scores(config, contexts[mask], ids[mask])
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


def _scores(config: KeyConfig, contexts: NDArray[np.int64], ids: NDArray[np.int64]) -> NDArray:
    if config.algorithm == "gumbel":
        return token_scores(config.key, contexts, ids)
    a = token_scores(prf.derive_key(config.key, b"key_a"), contexts, ids)
    b = token_scores(prf.derive_key(config.key, b"key_b"), contexts, ids)
    return (1.0 - config.alpha) * a + config.alpha * b


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
        deduplicate=deduplicate,
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
    detections = [detect_config(ids, c, threshold) for c in configs]
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
