"""Text in, decision out: the scoring path's one call into the detector.

``decide_texts`` takes texts and the family's groups (one tokenizer each, its key
configurations and the reading it may take) and goes down once: it tokenizes every text once
per tokenizer, makes the model-free stage of the decision (``detector.decision.decide``),
reads with a model only the texts that stage left undecided (when asked, and as far as the
caller allows), makes the reading stage on them, and builds the best hypothesis's heatmap and
evidence chart. ``detect_text`` is the same for one text under one tokenizer."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from detector.core.config import DEFAULT_THRESHOLD, KeyConfig, as_key_config
from detector.decision.decide import Decision, decide, decide_many
from detector.evidence.chart import heatmap_data
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


# How a call reads with a model: "never" (the model-free decision at the full threshold: no
# reading is possible or allowed, as for public verification and streams), "defer" (the
# model-free stage, with the reading's share set aside for every group that has a reader;
# an undecided text answers "pending"), "read" (the model-free stage, then the reading
# stage for the texts it left undecided).
READING_MODES = ("never", "defer", "read")


@dataclass(frozen=True)
class TextGroup:
    """One tokenizer's part of a family: its key configurations, each key's measured scored
    tokens for 80% power (None: the detector's default), and its reader (a callable that
    returns a loaded reading with ``read(list_of_ids) -> [ModelReading]``, or None when it
    cannot be had; None here: this tokenizer has no reading)."""

    tokenizer: Any
    configs: Sequence[KeyConfig]
    tokens_needed: Sequence[int | None] | None = None
    reader: Callable[[], Any] | None = None
    common_ngrams: bool = True

    def __repr__(self) -> str:  # configs hold key values: never let them reach a log line
        return f"<TextGroup keys={len(self.configs)} reader={self.reader is not None}>"


@dataclass(frozen=True)
class TextOutcome:
    """What ``decide_texts`` decided on one text: the decision, the state of its reading
    (``none``: no reading was needed or possible; ``pending``: undecided, its reading is
    still to come; ``done``: read, the reading stage decided; ``skipped``: undecided and
    due a reading the caller did not allow, so the model-free stage's verdict stands), each
    group's token ids and encoding, the best hypothesis's heatmap (when asked) and the
    seconds its reading took."""

    decision: Decision
    reading: str
    token_ids: tuple[Any, ...] = field(repr=False)
    encodings: tuple[Any, ...] = field(repr=False)
    heatmap: dict[str, Any] | None = None
    read_seconds: float = 0.0


def decide_texts(
    texts: Sequence[str],
    groups: Sequence[TextGroup],
    *,
    names: Sequence[str | None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    reading: str = "never",
    allow_read: Callable[[int, int], bool] | None = None,
    heatmap: bool = False,
    max_spans: int = MAX_SPANS,
) -> list[TextOutcome]:
    """Decide ``texts`` under every group's keys (Holm over all of them), reading with a
    model as ``reading`` says (``READING_MODES``). ``allow_read(t, tokens)``: asked, in text
    order, before text t is read (its token count over the groups read); False leaves it
    ``skipped`` (a budget). ``heatmap``: the best hypothesis's per-token scores and evidence
    chart (``detector.evidence.chart.heatmap_data``). A text the model-free stage decides
    is never read."""
    from detector.text.tokenizers import as_tokenizer, offsets_of

    if reading not in READING_MODES:
        raise ValueError(f"reading must be one of {READING_MODES}")
    if not groups or not any(g.configs for g in groups):
        raise ValueError("at least one key is needed")
    toks = [as_tokenizer(g.tokenizer) for g in groups]
    encoded = [[tok.encode_lazy(text) for tok in toks] for text in texts]
    reserve = [reading != "never" and g.reader is not None for g in groups]
    names = [c.name for g in groups for c in g.configs] if names is None else list(names)

    def documents(t: int, readings: Sequence[Any] | None = None) -> list[Document]:
        docs = []
        for g, (group, tok) in enumerate(zip(groups, toks, strict=True)):
            r = None if readings is None else readings[g]
            docs.append(
                Document(
                    encoded[t][g][0],
                    list(group.configs),
                    None if r is None else r.expected,
                    tokens_needed=group.tokens_needed or None,
                    ngrams=tok.ngram_table if group.common_ngrams else None,
                    observed_scores=None if r is None else r.observed,
                )
            )
        return docs

    def offsets(t: int) -> list[Any]:
        return [functools.partial(offsets_of, enc) for _, enc in encoded[t]]

    first = decide_many(
        [documents(t) for t in range(len(texts))],
        names=names,
        threshold=threshold,
        max_spans=max_spans,
        offsets=[offsets(t) for t in range(len(texts))],
        reserve=[reserve] * len(texts),
    )
    decisions: list[Decision] = list(first)
    states = ["pending" if d.needs_reading else "none" for d in first]
    seconds = [0.0] * len(texts)
    if reading == "read":
        due = [t for t, d in enumerate(first) if d.needs_reading]
        chosen = []
        for t in due:
            size = sum(len(encoded[t][g][0]) for g in range(len(groups)) if reserve[g])
            if allow_read is None or allow_read(t, size):
                chosen.append(t)
            else:
                states[t] = "skipped"
        if chosen:
            got = _read(chosen, groups, reserve, encoded)
            read_ok = [t for t in chosen if got[t] is not None]
            for t in chosen:
                if got[t] is None:
                    states[t] = "skipped"  # the reading could not be had: stage one stands
            second = decide_many(
                [documents(t, got[t][0]) for t in read_ok],  # type: ignore[index]
                names=names,
                threshold=threshold,
                max_spans=max_spans,
                offsets=[offsets(t) for t in read_ok],
                reserve=[reserve] * len(read_ok),
            )
            for t, d in zip(read_ok, second, strict=True):
                decisions[t], states[t] = d, "done"
                seconds[t] = got[t][1]  # type: ignore[index]
    out = []
    for t, d in enumerate(decisions):
        data = None
        if heatmap and d.best is not None:
            g = d.documents[d.best]
            pos = d.best - sum(len(groups[k].configs) for k in range(g))
            data = heatmap_data(
                d.hypotheses[d.best].detection,
                offsets_of(encoded[t][g][1]),
                groups[g].configs[pos],
            )
        out.append(
            TextOutcome(
                decision=d,
                reading=states[t],
                token_ids=tuple(ids for ids, _ in encoded[t]),
                encodings=tuple(enc for _, enc in encoded[t]),
                heatmap=data,
                read_seconds=seconds[t],
            )
        )
    return out


def _read(
    chosen: Sequence[int],
    groups: Sequence[TextGroup],
    reserve: Sequence[bool],
    encoded: Sequence[Sequence[tuple[Any, Any]]],
) -> dict[int, tuple[list[Any], float] | None]:
    """Each chosen text's readings (one per group, None where the group has none) and the
    seconds they took (its share of each group's batched read), or None where a group's
    reader could not be loaded."""
    out: dict[int, tuple[list[Any], float] | None] = {
        t: ([None] * len(groups), 0.0) for t in chosen
    }
    for g, group in enumerate(groups):
        if not reserve[g] or group.reader is None:
            continue
        assist = group.reader()
        if assist is None:
            for t in chosen:
                out[t] = None
            continue
        start = time.perf_counter()
        found = assist.read([encoded[t][g][0] for t in chosen])
        spent = (time.perf_counter() - start) / max(len(chosen), 1)
        for t, r in zip(chosen, found, strict=True):
            entry = out[t]
            if entry is not None:
                entry[0][g] = r
                out[t] = (entry[0], entry[1] + spent)
    return out


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
