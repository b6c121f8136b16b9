"""Text in, decision out: ``detect_text`` tokenizes once and makes the one decision
(``detector.decision.decide``) under every key of the family, with a model's reading when a
model is given."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from detector.core.config import DEFAULT_THRESHOLD, KeyConfig, as_key_config
from detector.decision.decide import Decision, decide
from detector.evidence.detection import Document
from detector.evidence.localize import MAX_SPANS


@dataclass(frozen=True)
class TextDecision(Decision):
    """The decision on a text tested under every configuration with one tokenizer."""

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
    assist: Any = None,
    common_ngrams: bool = True,
    tokens_needed: Sequence[int | None] | None = None,
    max_spans: int = MAX_SPANS,
) -> TextDecision:
    """Tokenize ``text`` once and decide under every key configuration (``decide``: global
    test, span scan, Holm over the keys). With ``assist`` (a
    ``detector.reading.model.ModelAssist`` for this tokenizer) each key also runs the
    weighted test and decides with both. With ``common_ngrams`` (the default), pairs in the
    tokenizer's shipped n-gram table are left unscored; ``common_ngrams=False`` scores every
    de-duplicated token, as vLLM's detector does. ``tokens_needed``: each key's measured
    scored tokens for 80% power (the three-way verdict's basis when no model reads the text).
    Spans carry character offsets."""
    from detector.text.tokenizers import as_tokenizer, offsets_of

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
    doc = Document(
        ids,
        configs,
        None if reading is None else reading.expected,
        tokens_needed=tokens_needed,
        ngrams=tok.ngram_table if common_ngrams else None,
        observed_scores=None if reading is None else reading.observed,
    )
    decision = decide(
        [doc],
        names=[c.name for c in configs],
        threshold=threshold,
        max_spans=max_spans,
        offsets=[lambda: offsets_of(encoding)],
    )
    return TextDecision(
        **{f.name: getattr(decision, f.name) for f in fields(Decision)},
        token_ids=ids,
        tokenizer_hash=tok.content_hash,
        _encoding=encoding,
    )
