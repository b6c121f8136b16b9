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
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from detector.core.config import KeyConfig
from detector.credentials.reading import read_text
from detector.decision.decide import Decision, decide
from detector.decision.family import FamilyVerdict, TestedHypothesis, VerdictResult
from detector.decision.text import TextGroup, decide_texts
from detector.evidence.detection import Detection, Document
from detector.evidence.localize import Localization
from detector.text.ngrams import applied_hash
from detector.text.tokenizers import Tokenizer as LoadedTokenizer
from detector.text.tokenizers import load_tokenizer

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
    # The reading stage's share of the level was set aside for it (its text was or may be
    # read): its decision p-value is the model-free one over 1 - READING_SHARE.
    reading_reserved: bool = False
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
    # The text's reading: "none" (not needed or not possible), "pending" (undecided, a
    # worker reads it), "done" (read: the reading stage decided), "skipped" (due and not
    # taken: a budget, or the model could not be loaded; the model-free verdict stands).
    reading: str = "none"
    read_seconds: float = 0.0  # what its reading took (0 without one)
    # What the text's Content Credentials say (provenance.lib.content_credentials; None: the
    # text was not given, as for a stream's token ids).
    content_credentials: dict[str, Any] | None = None


def tokenizer_load(tokenizer: Tokenizer) -> LoadedTokenizer:
    """Load a registered tokenizer, refusing one whose content changed since registration."""
    try:
        loaded = load_tokenizer(tokenizer.source)
    except (OSError, ValueError):
        raise ScoringError(f"tokenizer {tokenizer.name!r} cannot be loaded") from None
    if loaded.content_hash != tokenizer.content_hash:
        raise ScoringError(f"tokenizer {tokenizer.name!r} changed since it was registered")
    return loaded


def _document(ids: Any, group: KeyGroup) -> Document:
    """Group ``group``'s document of one text (a stream's token ids, no reading); the
    tokenizer's n-gram table, when it has one, leaves pairs common in human text unscored."""
    return Document(
        ids,
        group.configs,
        tokens_needed=group.tokens_needed or None,
        ngrams=group.loaded.ngram_table,
    )


def assist_budget() -> int:
    """Tokens one task may read with assisting models (``PROVENANCE_ASSIST_MAX_TOKENS``;
    0 = 2,048 on the CPU, 1,000,000 on CUDA); 0 when model assistance is off
    (``PROVENANCE_MODEL_ASSIST`` 0, or "auto" without a CUDA device). With it on
    ("adaptive", the default) a worker reads only the texts the model-free decision left
    undecided (``detector.decision.text.decide_texts``)."""
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


def reading_on(groups: list[KeyGroup]) -> bool:
    """Whether a check under ``groups`` may be read on a worker: model assistance is on and a
    group's tokenizer has a registered model. Such a check's model-free decision sets the
    reading's share of the threshold aside (``detector.decision.rule.READING_SHARE``)."""
    return assist_budget() > 0 and any(g.tokenizer.model_path for g in groups)


def assist_for(tokenizer: Tokenizer) -> Any:
    """The tokenizer's reading, loaded once per process: the one ``PROVENANCE_READING``
    names (``detector.reading.choice``; torch on a CUDA worker), or None: no model
    registered, or it cannot be loaded (then the model-free stage's verdict stands)."""
    if not tokenizer.model_path:
        return None
    from detector.reading.choice import ReadingUnavailable, load_reading

    try:
        return load_reading(str(model_dir_of(tokenizer.model_path)), settings.PROVENANCE_READING)
    except (ReadingUnavailable, OSError, ValueError) as exc:
        logger.warning("model of tokenizer %r not loaded: %s", tokenizer.name, exc)
        return None


def model_dir_of(model_path: str) -> Path:
    """The directory a tokenizer's ``model_path`` names (EMBEDDED_MODEL: the converted
    embedded SmolLM2, converted on first use)."""
    if model_path == EMBEDDED_MODEL:
        from generator.models import embedded_model_dir

        return embedded_model_dir()
    return Path(model_path).expanduser()


def _text_groups(groups: list[KeyGroup], reading: str) -> list[TextGroup]:
    """The detector's view of the prepared groups: a reader for each group whose tokenizer
    has a model, when this call may read (``reading`` other than "never", assistance on)."""
    on = reading != "never" and assist_budget() > 0
    return [
        TextGroup(
            tokenizer=g.loaded,
            configs=g.configs,
            tokens_needed=g.tokens_needed or None,
            reader=functools.partial(assist_for, g.tokenizer)
            if on and g.tokenizer.model_path
            else None,
        )
        for g in groups
    ]


def score_text(
    text: str,
    groups: list[KeyGroup],
    *,
    threshold: float,
    with_tokens: bool = True,
    reading: str = "never",
) -> TextResult:
    """Test ``text`` under every prepared key: one call into the detector
    (``detector.decision.text.decide_texts``: tokenize once per tokenizer, the model-free
    stage, a reading where it left the text undecided, the reading stage, the heatmap).
    ``reading``: "never" (no reading: public verification, streams), "defer" (a request: the
    model-free stage, an undecided text answers ``reading`` "pending" for a worker to
    read), "read" (a worker: read where undecided, within ``PROVENANCE_ASSIST_MAX_TOKENS``)."""
    start = time.perf_counter()
    tokens = assist_budget()
    (outcome,) = decide_texts(
        [text],
        _text_groups(groups, reading),
        names=_names(groups),
        threshold=threshold,
        reading=reading,
        allow_read=lambda _t, n: n <= tokens,
        heatmap=with_tokens,
    )
    result = _result(outcome.decision, groups)
    result = replace(
        result,
        token_data=outcome.heatmap,
        reading=outcome.reading,
        read_seconds=outcome.read_seconds,
        content_credentials=credentials_of(text),
    )
    return replace(result, elapsed_ms=(time.perf_counter() - start) * 1000.0)


def score_texts(
    texts: list[str],
    groups: list[KeyGroup],
    *,
    threshold: float,
    reading: str = "never",
    allow_read: Callable[[int, int], bool] | None = None,
) -> list[TextResult]:
    """The audit path: like ``score_text`` for many texts (no heatmaps), every (text,
    tokenizer) document in one ``detect_batch`` call per stage: one kernel launch per
    distinct (width, algorithm, alpha) on CUDA, the same numpy path as ``detect_text`` on
    the CPU. ``reading`` "read": the texts the model-free stage left undecided are read, in
    order, within this task's token budget (``PROVENANCE_ASSIST_MAX_TOKENS``) and as far as
    ``allow_read(t, tokens)`` allows (an audit's daily reading budget); the others keep
    their model-free verdict (``reading`` "skipped")."""
    start = time.perf_counter()
    budget = [assist_budget()]

    def allow(t: int, n: int) -> bool:
        if n > budget[0] or (allow_read is not None and not allow_read(t, n)):
            return False
        budget[0] -= n
        return True

    outcomes = decide_texts(
        texts,
        _text_groups(groups, reading),
        names=_names(groups),
        threshold=threshold,
        reading=reading,
        allow_read=allow,
    )
    each_ms = (time.perf_counter() - start) * 1000.0 / max(len(texts), 1)
    return [
        replace(
            _result(o.decision, groups),
            elapsed_ms=each_ms,
            reading=o.reading,
            read_seconds=o.read_seconds,
            content_credentials=credentials_of(text),
        )
        for o, text in zip(outcomes, texts, strict=True)
    ]


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
    reserved = decision.reserved or (False,) * len(rows)
    hypotheses = tuple(
        HypothesisResult(
            key, tokenizer, h, ngram_table=table, measured_fpr=fpr, reading_reserved=held
        )
        for (key, tokenizer), h, table, fpr, held in zip(
            rows, decision.hypotheses, tables, fprs, reserved, strict=True
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


@functools.cache
def _anchors(path: str) -> str | None:
    return Path(path).read_text() if path else None


def credentials_of(text: str) -> dict[str, Any]:
    """What ``text``'s Content Credentials say (``detector.credentials.reading.Credentials``),
    judged by the trust anchors of ``PROVENANCE_C2PA_TRUST_ANCHORS`` (unset: trust is not
    evaluated)."""
    return read_text(text, _anchors(settings.PROVENANCE_C2PA_TRUST_ANCHORS)).as_dict()
