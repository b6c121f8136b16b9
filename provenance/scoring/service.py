"""Scoring a text against registered keys: the one place the web product calls the detector.

Keys in (``KeyGroup``: decrypted configurations and the rows they came from, built by
``provenance.keys.selectors.prepare_keys``), decision out (``TextResult``); the callers store
it. This module imports no app: checks, audits, streams, public verification, key
calibration and the playground call it.

Keys are grouped by tokenizer: each group tokenizes the text once (a
``detector.evidence.detection.Document`` holding the group's configurations), and the
detector's one decision (``detector.decision.decide``: global test, span scan, the weighted
test when a model read the text, Holm over every (key x tokenizer) pair tested) decides. A
tokenizer with a shipped n-gram table (``detector.text.ngrams``) leaves the pairs common in
human text unscored. Nothing statistical happens here and nothing is decided: this module
binds the detector's decision to registry rows.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from detector.core.config import KeyConfig
from detector.decision.decide import Decision, decide, decide_many
from detector.decision.family import FamilyVerdict, TestedHypothesis, VerdictResult
from detector.evidence.chart import cumulative_log10_p
from detector.evidence.detection import Detection, Document
from detector.evidence.localize import Localization
from detector.text.ngrams import applied_hash
from detector.text.tokenizers import Tokenizer as LoadedTokenizer
from detector.text.tokenizers import load_tokenizer, offsets_of

CHART_POINTS = 80  # points of the cumulative-evidence chart; each costs one gamma tail
# Tokens a task reads with an assisting model when PROVENANCE_ASSIST_MAX_TOKENS is 0 (auto):
# SmolLM2-135M reads about 30 tokens/s on one loaded CPU core, thousands per second on a GPU.
ASSIST_TOKENS_CPU = 2048
ASSIST_TOKENS_GPU = 1_000_000

logger = logging.getLogger(__name__)


EMBEDDED_MODEL = "embedded"  # Tokenizer.model_path of the converted embedded SmolLM2


class Tokenizer(Protocol):
    """What scoring reads of a registered tokenizer (``provenance.keys.models.Tokenizer``)."""

    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def model_path(self) -> str: ...


class ScoringError(Exception):
    """Scoring cannot proceed (for a reason other than a transient fault); safe to show."""


@dataclass(frozen=True)
class KeyGroup:
    """Keys sharing one tokenizer, decrypted and ready (built once per task)."""

    # The registry's rows (provenance.keys.models): a Tokenizer and its WatermarkKeys. Scoring
    # reads their names; the callers store results against them.
    tokenizer: Any
    loaded: LoadedTokenizer
    keys: tuple[Any, ...]
    configs: tuple[KeyConfig, ...]
    # Each key's measured scored tokens for 80% power (None: the detector's default), which
    # the three-way verdict weighs the scored token count against.
    tokens_needed: tuple[int | None, ...] = ()
    # Each key's measured false-positive rate when the group was prepared
    # (``provenance.keys.selectors.measured_fpr``; None: never calibrated). Stored with the
    # check, so a later calibration does not change what an old answer says.
    measured_fpr: tuple[dict[str, Any] | None, ...] = ()

    def __repr__(self) -> str:  # configs hold key values: never let them reach a log line
        return f"<KeyGroup tokenizer={self.tokenizer.name!r} keys={len(self.keys)}>"


@dataclass(frozen=True)
class HypothesisResult:
    """The detector's hypothesis ``hypothesis`` bound to the registry rows it tested."""

    key: Any  # provenance.keys.models.WatermarkKey
    tokenizer: Any  # provenance.keys.models.Tokenizer
    hypothesis: TestedHypothesis
    # Content hash of the n-gram table that filtered its scored tokens; "" when none applied.
    ngram_table: str = ""
    # The key's measured false-positive rate when scored (None: not calibrated then).
    measured_fpr: dict[str, Any] | None = None

    @property
    def index(self) -> int:
        return self.hypothesis.index

    @property
    def decided_by(self) -> str:
        """The test its decision rests on, as the detector decided: "gamma" (the Gamma test
        and the span scan) or "weighted" (the model-assisted test, when a model read it)."""
        return self.hypothesis.decided_by

    @property
    def detection(self) -> Detection:
        return self.hypothesis.detection

    @property
    def adjusted_log10_p(self) -> float:
        return self.hypothesis.adjusted_log10_p


@dataclass(frozen=True)
class TextResult(VerdictResult):
    """The detector's verdict on one text, its hypotheses bound to registry rows, what the
    heatmap shows, and the time scoring took."""

    family: FamilyVerdict
    hypotheses: tuple[HypothesisResult, ...]
    token_data: dict[str, Any] | None
    elapsed_ms: float
    localizations: tuple[Localization, ...] = ()  # one per hypothesis

    decision: Decision | None = None  # what the detector decided (None: not scored here)

    @property
    def decided_by(self) -> str:
        """The test the detector's verdict rests on (``Decision.decided_by``)."""
        return "" if self.decision is None else self.decision.decided_by

    @property
    def key_measured_fpr(self) -> dict[str, Any] | None:
        """The best key's measured false-positive rate when the text was scored."""
        return None if self.best is None else self.hypotheses[self.best].measured_fpr

    spans: tuple[dict[str, Any], ...] = ()  # every hypothesis's accepted spans, in text order


def tokenizer_load(tokenizer: Tokenizer) -> LoadedTokenizer:
    """Load a registered tokenizer, refusing one whose content changed since registration."""
    try:
        loaded = load_tokenizer(tokenizer.source)
    except (OSError, ValueError):
        raise ScoringError(f"tokenizer {tokenizer.name!r} cannot be loaded") from None
    if loaded.content_hash != tokenizer.content_hash:
        raise ScoringError(f"tokenizer {tokenizer.name!r} changed since it was registered")
    return loaded


def _document(ids: Any, group: KeyGroup, reading: Any = None) -> Document:
    """Group ``group``'s document of one text (``reading``: its model's ``ModelReading``, E[s]
    and observed scores per token); the tokenizer's n-gram table, when it has one, leaves
    pairs common in human text unscored."""
    return Document(
        ids,
        group.configs,
        expected_scores=None if reading is None else reading.expected,
        tokens_needed=group.tokens_needed or None,
        ngrams=group.loaded.ngram_table,
        observed_scores=None if reading is None else reading.observed,
    )


def assist_budget() -> int:
    """Tokens one task may read with assisting models (``PROVENANCE_ASSIST_MAX_TOKENS``;
    0 = 2,048 on the CPU, 1,000,000 on CUDA); 0 when model assistance is off
    (``PROVENANCE_MODEL_ASSIST`` 0, or "auto" without a CUDA device)."""
    mode = settings.PROVENANCE_MODEL_ASSIST
    if not mode:
        return 0
    from detector.core.scoring import cuda_available

    gpu = cuda_available()
    if mode == "auto" and not gpu:
        return 0
    if settings.PROVENANCE_ASSIST_MAX_TOKENS:
        return int(settings.PROVENANCE_ASSIST_MAX_TOKENS)
    return ASSIST_TOKENS_GPU if gpu else ASSIST_TOKENS_CPU


def assist_for(tokenizer: Tokenizer) -> Any:
    """The tokenizer's model (``detector.reading.model.ModelAssist``, or its ONNX Runtime twin
    ``detector.reading.ort.OrtAssist`` under ``PROVENANCE_ASSIST_RUNTIME=onnxruntime`` on a
    worker without CUDA; loaded once per process), or None: no model registered, or it cannot
    be loaded (then the Gamma test decides alone)."""
    if not tokenizer.model_path:
        return None
    from detector.core.scoring import cuda_available
    from detector.reading.model import ModelDirError, load_assist
    from detector.reading.ort import OrtUnavailable, load_ort_assist

    ort = settings.PROVENANCE_ASSIST_RUNTIME == "onnxruntime" and not cuda_available()
    try:
        path = str(model_dir_of(tokenizer.model_path))
        return load_ort_assist(path) if ort else load_assist(path)
    except (ModelDirError, OrtUnavailable, OSError, ValueError) as exc:
        logger.warning("model of tokenizer %r not loaded: %s", tokenizer.name, exc)
        return None


def model_dir_of(model_path: str) -> Path:
    """The directory a tokenizer's ``model_path`` names (EMBEDDED_MODEL: the converted
    embedded SmolLM2, converted on first use)."""
    if model_path == EMBEDDED_MODEL:
        from generator.models import embedded_model_dir

        return embedded_model_dir()
    return Path(model_path).expanduser()


def expected_scores(
    ids: list[list[np.ndarray]], groups: list[KeyGroup], budget: int
) -> list[list[Any]]:
    """``out[t][g]``: the model's reading (``detector.reading.model.ModelReading``: ``E[s]`` and
    the observed score per token) of text t under group g's tokenizer, or None (no model, or
    beyond this task's ``budget`` of tokens: texts are taken in order, one batched read per
    model). Which texts get the model depends on their lengths only."""
    out: list[list[Any]] = [[None] * len(groups) for _ in ids]
    for g, group in enumerate(groups):
        assist = assist_for(group.tokenizer) if budget > 0 else None
        if assist is None:
            continue
        chosen, used = [], 0
        for t, per in enumerate(ids):
            if used + len(per[g]) <= budget:
                chosen.append(t)
                used += len(per[g])
        found = assist.read([ids[t][g] for t in chosen]) if chosen else []
        for t, e in zip(chosen, found, strict=True):
            out[t][g] = e
    return out


def score_text(
    text: str,
    groups: list[KeyGroup],
    *,
    threshold: float,
    with_tokens: bool = True,
    assist: bool = False,
) -> TextResult:
    """Test ``text`` under every prepared key: one document per tokenizer, one detector
    verdict over all their hypotheses (Holm). ``assist``: tokenizers with a registered model
    also run the weighted test (workers only: a forward pass is too slow for a request)."""
    start = time.perf_counter()
    encoded = [group.loaded.encode_lazy(text) for group in groups]  # (ids, encoding)
    budget = assist_budget() if assist else 0
    (expected,) = expected_scores([[ids for ids, _ in encoded]], groups, budget)
    docs = [
        _document(ids, group, e)
        for (ids, _), group, e in zip(encoded, groups, expected, strict=True)
    ]
    decision = decide(
        docs,
        names=_names(groups),
        threshold=threshold,
        offsets=[functools.partial(offsets_of, encoding) for _, encoding in encoded],
    )
    result = _result(decision, groups)
    if with_tokens and result.best is not None:
        g, pos = _position(groups, result.best)
        # Offsets only for the heatmap's tokenizer: the other groups never pay for them.
        offsets = offsets_of(encoded[g][1])
        tokens = heatmap_data(
            result.hypotheses[result.best].detection, offsets, groups[g].configs[pos]
        )
        result = replace(result, token_data=tokens)
    return replace(result, elapsed_ms=(time.perf_counter() - start) * 1000.0)


def score_texts(
    texts: list[str], groups: list[KeyGroup], *, threshold: float, assist: bool = False
) -> list[TextResult]:
    """The audit path: like ``score_text`` for many texts (no heatmaps), every (text,
    tokenizer) document in one ``detect_batch`` call: one kernel launch per distinct
    (width, algorithm, alpha) on CUDA, the same numpy path as ``detect_text`` on the CPU.
    ``assist``: as for ``score_text``, every model reading its texts in one batched call."""
    start = time.perf_counter()
    # One tokenization per (text, tokenizer); its encoding is kept so that the character
    # offsets of the texts where a span is found come without tokenizing them again.
    encoded = [[g.loaded.encode_lazy(text) for g in groups] for text in texts]
    budget = assist_budget() if assist else 0
    expected = expected_scores([[ids for ids, _ in per] for per in encoded], groups, budget)
    texts_docs = [
        [_document(ids, g, e) for (ids, _), g, e in zip(per, groups, per_e, strict=True)]
        for per, per_e in zip(encoded, expected, strict=True)
    ]
    # One detect_batch call and the scan's first windows in one batched pass; the offsets
    # only for the texts where a span was found.
    decisions = decide_many(
        texts_docs,
        names=_names(groups),
        threshold=threshold,
        offsets=[[functools.partial(offsets_of, enc) for _, enc in per] for per in encoded],
    )
    results = [_result(decision, groups) for decision in decisions]
    each_ms = (time.perf_counter() - start) * 1000.0 / max(len(texts), 1)
    return [replace(result, elapsed_ms=each_ms) for result in results]


def score_ids(ids: Any, groups: list[KeyGroup], *, threshold: float) -> TextResult:
    """A stream's path: like ``score_text`` for token ids already in the tokenizer of
    ``groups``' one group (no model, no heatmap, no character offsets): the same document
    (the tokenizer's n-gram table, each key's measured power), the same decision and the same
    stored figures (each key's measured false-positive rate) as a check of the text they
    encode."""
    if len(groups) != 1:
        raise ScoringError("token ids are in one tokenizer: score them under one key group")
    start = time.perf_counter()
    decision = decide(
        [_document(np.asarray(ids, np.int64), groups[0])],
        names=_names(groups),
        threshold=threshold,
    )
    result = _result(decision, groups)
    return replace(result, elapsed_ms=(time.perf_counter() - start) * 1000.0)


def _position(groups: list[KeyGroup], index: int) -> tuple[int, int]:
    """(group, position in the group) of the family's hypothesis ``index``."""
    for g, group in enumerate(groups):
        if index < len(group.configs):
            return g, index
        index -= len(group.configs)
    raise IndexError(index)


def _names(groups: list[KeyGroup]) -> list[str | None]:
    return [key.name for group in groups for key in group.keys]


def _result(decision: Decision, groups: list[KeyGroup]) -> TextResult:
    """The detector's decision over every group's hypotheses, bound to the registry rows."""
    rows = [(key, group.tokenizer) for group in groups for key in group.keys]
    tables = [_table_hash(group, c) for group in groups for c in group.configs]
    fprs = [
        group.measured_fpr[i] if group.measured_fpr else None
        for group in groups
        for i in range(len(group.keys))
    ]
    hypotheses = tuple(
        HypothesisResult(key, tokenizer, h, table, fpr)
        for (key, tokenizer), h, table, fpr in zip(
            rows, decision.hypotheses, tables, fprs, strict=True
        )
    )
    spans = tuple(
        {
            "start_token": s.start,
            "end_token": s.end,
            "start_char": s.start_char,
            "end_char": s.end_char,
            "num_scored_tokens": s.num_scored_tokens,
            "p_value": s.p_value,
            "log10_p": s.log10_p,
            "key_id": str(rows[s.key_index][0].id),
            "key_name": s.key_name,
        }
        for s in decision.spans
    )
    return TextResult(
        family=decision.family,
        hypotheses=hypotheses,
        token_data=None,
        elapsed_ms=0.0,
        localizations=decision.localizations,
        spans=spans,
        decision=decision,
    )


def _table_hash(group: KeyGroup, config: KeyConfig) -> str:
    """The n-gram table ``_document`` gave this key's hypothesis, by content hash ("" none)."""
    return applied_hash(group.loaded.ngram_table, config.context_width) or ""


def heatmap_data(detection: Detection, offsets: np.ndarray, config: KeyConfig) -> dict[str, Any]:
    """Per-token scores with character offsets, plus the cumulative evidence along the text."""
    return {
        "context_width": config.context_width,
        "offsets": offsets.astype(int).tolist(),
        "scores": [round(float(s), 4) for s in detection.token_scores],
        "scored": [bool(m) for m in detection.scored_mask],
        "chart": [
            [i, round(lp, 3)] for i, lp in cumulative_log10_p(detection, config, CHART_POINTS)
        ],
    }
