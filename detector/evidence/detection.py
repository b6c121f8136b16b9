"""The evidence of one text under one family of keys: ``detect_batch`` for many tokenized
documents, ``detect_config`` for token ids under one configuration, ``detect_ids`` for token ids
under a bare key. They compute scores and p-values only; the verdict is the decision's
(``detector.decision.decide``, and ``detector.decision.text.detect_text`` for text).

Scoring follows docs/spec.md §3: contexts from the text itself, first occurrence of each
context scored, ``s = -log(1 - u)`` in float64, Gamma(n, 1) survival p-value. With an n-gram
table (``detector.text.ngrams``; ``detect_text`` uses its tokenizer's shipped table), the decision
also skips the (context, token) pairs common in human text; the statistic over every
de-duplicated token, as vLLM's detector computes it, is kept beside it (``vllm_*``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector.core import scoring
from detector.core.config import DEFAULT_THRESHOLD, KeyConfig
from detector.core.contexts import COMPILED_FROM, as_token_array, build_contexts, dedup_mask
from detector.core.stats import (
    dual_key_sf,
    gamma_sf,
)
from detector.evidence.power import PowerModel, power_model
from detector.evidence.weighted import WeightedTest, weighted_test
from detector.text.ngrams import NgramTable


@dataclass(frozen=True)
class Detection:
    """The test of one text under one key."""

    score: float
    p_value: float
    log10_p: float
    num_tokens: int
    num_scored_tokens: int
    token_scores: NDArray[np.float64] = field(repr=False)  # [num_tokens], 0.0 where not scored
    scored_mask: NDArray[np.bool_] = field(repr=False)  # [num_tokens]
    # The model-assisted test (``detector.reading.model``), when a model read the text, over the
    # same
    # scored tokens. ``score``, ``p_value`` and ``log10_p`` stay the Gamma sum test's.
    weighted: WeightedTest | None = field(default=None, repr=False)
    # De-duplicated positions left unscored because their pair is common in human text.
    num_common_tokens: int = 0
    # The statistic over every de-duplicated token, as vLLM's detector computes it; equal to
    # the decision's own when no n-gram table was used (None here means exactly that).
    vllm_score: float | None = None
    vllm_p_value: float | None = None
    vllm_log10_p: float | None = None
    vllm_num_scored_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.vllm_score is None:
            for name in ("score", "p_value", "log10_p", "num_scored_tokens"):
                object.__setattr__(self, f"vllm_{name}", getattr(self, name))

    threshold: float = DEFAULT_THRESHOLD
    # What a watermarked text of this kind would score (detector.evidence.power): the model's
    # per-token
    # expectations, the key's measured power curve, or the shipped default.
    power_model: PowerModel = field(default_factory=power_model, repr=False, compare=False)

    @property
    def expected_scores(self) -> NDArray[np.float64] | None:
        """The model's ``E[s]`` of each scored token (text order), or None without a model."""
        return None if self.weighted is None else self.weighted.expected_scores

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "score": self.score,
            "p_value": self.p_value,
            "log10_p": self.log10_p,
            "num_tokens": self.num_tokens,
            "num_scored_tokens": self.num_scored_tokens,
            "num_common_tokens": self.num_common_tokens,
            "vllm_score": self.vllm_score,
            "vllm_p_value": self.vllm_p_value,
            "vllm_log10_p": self.vllm_log10_p,
            "vllm_num_scored_tokens": self.vllm_num_scored_tokens,
        }
        if self.weighted is not None:
            out["weighted"] = self.weighted.summary()
        return out


def check_threshold(threshold: float) -> None:
    if not 0.0 < threshold < 1.0:
        raise ValueError("threshold must lie in (0, 1)")


def survival(config: KeyConfig, score: float, n: int) -> tuple[float, float]:
    """(p-value, log10 p) of a sum ``score`` of ``n`` scored tokens under the null: Gamma(n, 1)
    for ``gumbel``, the moment-matched gamma of docs/spec.md §4 for ``dual_key_gumbel``."""
    if config.algorithm == "dual_key_gumbel":
        return dual_key_sf(score, n, config.alpha)
    return gamma_sf(score, n)


@dataclass(frozen=True)
class Document:
    """One tokenized text and the key configurations it is tested under (its hypotheses).

    The hypotheses of a document share its token ids; those with the same context width and
    de-duplication settings also share one context array and one scored mask, built once.
    Two documents never share anything, even when their token ids are equal.
    """

    token_ids: ArrayLike
    configs: Sequence[KeyConfig]
    # A model's E[s] for every token of the text (``detector.reading.model``): adds the
    # weighted test, and the three-way verdict's power (detector.evidence.power) comes from it
    # (with ``score_variances`` when given). ``tokens_needed``: each configuration's measured
    # scored tokens for 80% power.
    expected_scores: ArrayLike | None = None
    score_variances: ArrayLike | None = None
    tokens_needed: Sequence[int | None] | None = None
    # The model's observed score f(q_x) of every token (``ModelAssist.read``): with it the
    # weighted test uses the capped observed-token weights (``detector.reading.model``).
    observed_scores: ArrayLike | None = None

    def power_models(self, masks: Sequence[NDArray[np.bool_]]) -> list[PowerModel]:
        """One ``PowerModel`` per configuration, given its scored mask."""
        needed = list(self.tokens_needed) if self.tokens_needed is not None else []
        if needed and len(needed) != len(self.configs):
            raise ValueError("one tokens_needed per configuration is needed")
        e = None if self.expected_scores is None else np.asarray(self.expected_scores, np.float64)
        v = None if self.score_variances is None else np.asarray(self.score_variances, np.float64)
        out = []
        for i, mask in enumerate(masks):
            if e is not None and e.shape != mask.shape:
                raise ValueError("expected_scores needs one value per token")
            out.append(
                power_model(
                    expected_scores=None if e is None else e[mask],
                    variances=None if v is None or e is None else v[mask],
                    tokens_needed=needed[i] if needed else None,
                )
            )
        return out

    # Pairs to leave unscored (common in human text); applies to configurations of its width.
    ngrams: NgramTable | None = None

    def __repr__(self) -> str:  # configs hold key values
        return f"<Document hypotheses={len(self.configs)}>"


@dataclass(frozen=True)
class _Masks:
    """What the hypotheses of one configuration share: the de-duplicated positions (vLLM's
    scored set) and the positions the decision scores (``scored``: the de-duplicated ones
    minus the pairs common in human text)."""

    dedup: NDArray[np.bool_]
    scored: NDArray[np.bool_]


def _scored_mask(ids: NDArray[np.int64], config: KeyConfig, ngrams: NgramTable | None) -> _Masks:
    width = config.context_width
    table = ngrams if ngrams is not None and ngrams.applies_to(width) and len(ngrams) else None
    if ids.shape[0] >= COMPILED_FROM:
        # One compiled pass from the ids: each context's hash keys the de-duplication set and
        # its (context, token) fingerprint the table's (detector.core.compiled).
        from detector.core import compiled

        dedup, scored = compiled.scored_masks(
            ids,
            width,
            deduplicate=config.deduplicate,
            max_history=config.max_history,
            table=None if table is None else table.hash_set,
        )
        return _Masks(dedup, dedup if table is None else scored)
    contexts = build_contexts(ids, width)
    if config.deduplicate:
        dedup = dedup_mask(contexts, config.max_history)
    else:
        dedup = np.ones(ids.shape[0], np.bool_)
    if table is None:
        return _Masks(dedup, dedup)
    return _Masks(dedup, dedup & ~table.common_mask(ids, contexts))


def _masks(ids: NDArray[np.int64], doc: Document) -> list[_Masks]:
    """Masks per configuration of one document, each distinct one built once."""
    built: dict[tuple[int, bool, int | None], _Masks] = {}
    tags = [
        (c.context_width, c.deduplicate, c.max_history if c.deduplicate else None)
        for c in doc.configs
    ]
    for tag, c in zip(tags, doc.configs, strict=True):
        if tag not in built:
            built[tag] = _scored_mask(ids, c, doc.ngrams)
    return [built[tag] for tag in tags]


def _detection(
    ids: NDArray[np.int64],
    masks: _Masks,
    scores: NDArray[np.float64],
    config: KeyConfig,
    threshold: float,
    expected: ArrayLike | None = None,
    model: PowerModel | None = None,
    observed: ArrayLike | None = None,
) -> Detection:
    """``scores`` holds every de-duplicated position's score (0.0 elsewhere); it becomes the
    detection's ``token_scores`` (the skipped positions zeroed in place)."""
    mask = masks.scored
    vllm_n = int(masks.dedup.sum())
    vllm_total = float(scores.sum())
    if mask is masks.dedup:
        n, total, kept = vllm_n, vllm_total, scores
    else:  # zero the skipped positions in place: scores are finite and >= 0, so s * 0 = +0.0
        kept = np.multiply(scores, mask, out=scores)
        n, total = int(mask.sum()), float(kept.sum())
    p_value, log10_p = survival(config, total, n)
    vllm = (p_value, log10_p) if mask is masks.dedup else survival(config, vllm_total, vllm_n)
    return Detection(
        score=total,
        p_value=p_value,
        log10_p=log10_p,
        num_tokens=int(ids.shape[0]),
        num_scored_tokens=n,
        token_scores=kept,
        scored_mask=mask,
        weighted=(
            None if expected is None else weighted_test(kept, mask, expected, config, observed)
        ),
        threshold=threshold,
        power_model=model if model is not None else power_model(),
        num_common_tokens=vllm_n - n,
        vllm_score=vllm_total,
        vllm_p_value=vllm[0],
        vllm_log10_p=vllm[1],
        vllm_num_scored_tokens=vllm_n,
    )


def detect_config(
    token_ids: ArrayLike,
    config: KeyConfig,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    expected_scores: ArrayLike | None = None,
    ngrams: NgramTable | None = None,
    tokens_needed: int | None = None,
    observed_scores: ArrayLike | None = None,
) -> Detection:
    """Test ``token_ids`` under one key configuration, skipping ``ngrams``' pairs if given (and,
    given a model's ``E[s]`` per token, with the weighted test too, on the observed-token
    weights when ``observed_scores`` are given). ``expected_scores`` or the key's measured
    ``tokens_needed`` give the power model the three-way verdict weighs."""
    doc = Document(
        token_ids,
        [config],
        expected_scores,
        tokens_needed=[tokens_needed],
        ngrams=ngrams,
        observed_scores=observed_scores,
    )
    return detect_batch([doc], threshold)[0][0]


def detect_batch(
    docs: Sequence[Document], threshold: float = DEFAULT_THRESHOLD
) -> list[list[Detection]]:
    """Test every document under each of its configurations: ``out[d][h]`` is document d's
    hypothesis h. On CUDA, all scores come from one kernel launch per distinct (width,
    algorithm, alpha); on the CPU, numpy scores only the scored positions."""
    check_threshold(threshold)
    arrays = [as_token_array(d.token_ids) for d in docs]
    masks = [_masks(ids, d) for ids, d in zip(arrays, docs, strict=True)]
    models = [
        model
        for doc, doc_masks in zip(docs, masks, strict=True)
        for model in doc.power_models([m.scored for m in doc_masks])
    ]
    # One entry per hypothesis, document-major: (token ids, masks, config).
    flat = [
        (ids, m, c)
        for ids, doc, doc_masks in zip(arrays, docs, masks, strict=True)
        for c, m in zip(doc.configs, doc_masks, strict=True)
    ]
    # Every de-duplicated position is scored: vLLM's statistic needs them all.
    if scoring.cuda_available() and flat:
        full = _gpu_scores([ids for ids, *_ in flat], [c for *_, c in flat])
        scores = [np.where(m.dedup, s, 0.0) for (_, m, _), s in zip(flat, full, strict=True)]
    else:
        scores = [scoring.spread_scores(c, ids, m.dedup) for ids, m, c in flat]
    expected = [(d.expected_scores, d.observed_scores) for d in docs for _ in d.configs]
    found = iter(
        _detection(ids, m, s, c, threshold, e, model, o)
        for (ids, m, c), s, (e, o), model in zip(flat, scores, expected, models, strict=True)
    )
    return [[next(found) for _ in doc.configs] for doc in docs]


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
    threshold: float = DEFAULT_THRESHOLD,
    expected_scores: ArrayLike | None = None,
    ngrams: NgramTable | None = None,
    tokens_needed: int | None = None,
    observed_scores: ArrayLike | None = None,
) -> Detection:
    """Test token ids (the generating model's tokenizer, no special tokens) under ``key``.

    With ``expected_scores`` (a model's ``E[s]`` of every token, ``ModelAssist``), the
    weighted test runs too (``weighted``); with ``observed_scores`` as well
    (``ModelAssist.read``: the model-assisted default), it uses the capped observed-token
    weights, else ``E[s] - 1``. The power model (``power_model``, the three-way verdict's basis
    in ``detector.decision.family``) comes from the model's expectations, else the key's
    measured ``tokens_needed`` (scored tokens for 80% power), else a conservative default. Bare ids
    carry no tokenizer, so no n-gram table applies unless ``ngrams`` is given (for example
    ``load_tokenizer().ngram_table``)."""
    config = KeyConfig(
        key=key,
        algorithm=algorithm,  # type: ignore[arg-type]
        context_width=context_width,
        alpha=alpha,
        deduplicate_contexts="single_turn" if deduplicate else "none",
        deduplicate_contexts_max_history=None,  # a bare key: repeats searched over the whole text
    )
    return detect_config(
        token_ids,
        config,
        threshold,
        expected_scores=expected_scores,
        ngrams=ngrams,
        tokens_needed=tokens_needed,
        observed_scores=observed_scores,
    )
