"""Text in, verdict out: ``detect_text`` tokenizes once and tests every key of the family;
``assisted_detect`` tests token ids with the Gamma and the model-assisted tests."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector.core.config import DEFAULT_THRESHOLD, KeyConfig, as_key_config
from detector.decision.family import Verdict, combine
from detector.evidence.detection import Document, detect_batch, detect_config


@dataclass(frozen=True)
class TextDetection(Verdict):
    """A text tested under every configuration with one tokenizer (``detect_text``)."""

    token_ids: NDArray[np.int64] = field(repr=False, kw_only=True)
    tokenizer_hash: str | None = field(default=None, kw_only=True)
    _encoding: Any = field(default=None, repr=False, compare=False, kw_only=True)

    @functools.cached_property
    def offsets(self) -> NDArray[np.int64]:
        """``[n, 2]`` character offsets of every token (computed on first use)."""
        from detector.text.tokenizers import offsets_of

        return offsets_of(self._encoding)


def detect_text(
    text: str,
    tokenizer: Any,
    keys: Sequence[int | KeyConfig] | int | KeyConfig,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    correction: str = "holm",
    assist: Any = None,
    common_ngrams: bool = True,
    tokens_needed: Sequence[int | None] | None = None,
) -> TextDetection:
    """Tokenize ``text`` once and test every key configuration, correcting for their number.
    With ``assist`` (a ``detector.reading.model.ModelAssist`` for this tokenizer) each key also runs
    the weighted test and decides with both. With ``common_ngrams`` (the default), pairs in
    the tokenizer's shipped n-gram table are left unscored; ``common_ngrams=False`` scores
    every de-duplicated token, as vLLM's detector does. ``tokens_needed``: each key's measured
    scored tokens for 80% power (the three-way verdict's basis when no model reads the text)."""
    from detector.text.tokenizers import as_tokenizer

    if not isinstance(text, str):
        raise ValueError("text must be a str")
    if isinstance(keys, (int, KeyConfig)):
        keys = [keys]
    configs = [as_key_config(k) for k in keys]
    if not configs:
        raise ValueError("at least one key is needed")
    tok = as_tokenizer(tokenizer)
    ids, encoding = tok.encode_lazy(text)
    reading = None if assist is None else assist.read([ids])[0]
    ngrams = tok.ngram_table if common_ngrams else None
    doc = Document(
        ids,
        configs,
        None if reading is None else reading.expected,
        tokens_needed=tokens_needed,
        ngrams=ngrams,
        observed_scores=None if reading is None else reading.observed,
    )
    detections = detect_batch([doc], threshold)[0]
    names = [c.name for c in configs]
    verdict = combine(detections, names=names, threshold=threshold, correction=correction)
    return TextDetection(
        **{f.name: getattr(verdict, f.name) for f in fields(Verdict)},
        token_ids=ids,
        tokenizer_hash=tok.content_hash,
        _encoding=encoding,
    )


def assisted_detect(
    token_ids: ArrayLike,
    key: int | KeyConfig,
    assist: Any = None,
    *,
    expected_scores: ArrayLike | None = None,
    observed_scores: ArrayLike | None = None,
    temperature: float = 1.0,
    top_p: float = 1.0,
    threshold: float = DEFAULT_THRESHOLD,
) -> Any:
    """Test ``token_ids`` under ``key`` with the Gamma test and the weighted test; the
    ``Detection`` decides with both (``decided_by``, ``decision_log10_p``). Give either the
    model (``assist``: the observed-token weights) or the text's ``expected_scores`` (and
    ``observed_scores``) computed before."""
    if expected_scores is None:
        if assist is None:
            raise ValueError("give assist or expected_scores")
        reading = assist.read([token_ids], temperature=temperature, top_p=top_p)[0]
        expected_scores, observed_scores = reading.expected, reading.observed
    config = as_key_config(key)
    return detect_config(
        token_ids,
        config,
        threshold,
        expected_scores=expected_scores,
        observed_scores=observed_scores,
    )
