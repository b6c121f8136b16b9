"""The product's decision on a text: one function that every surface calls.

``decide`` takes the text's documents (one ``detector.evidence.detection.Document`` per
tokenizer, holding that tokenizer's key configurations, and the model's reading when a model
read the text) and makes the one decision:

1. every hypothesis (key configuration) is scored and gets the global Gamma test;
2. its scored tokens are scanned for watermarked spans (``detector.evidence.localize``); its
   document p-value is ``min(p_global / w, p_scan / (1 - w))``, ``w =
   detector.evidence.localize.GAMMA_SHARE`` (0.7);
3. with a model's reading, the weighted test joins: ``min(p_document / (1 - s), p_weighted /
   s)``, ``s = detector.decision.rule.READING_SHARE`` (0.5: ``2 min(p_document,
   p_weighted)``);
4. the hypotheses' p-values are corrected together (Holm), the family's three-way verdict
   follows (``detector.decision.family``), and each hypothesis names the test it rests on
   (``decided_by``);
5. the spans of every hypothesis, with character offsets when the caller gives them.

Adaptive reading: a document marked ``reserve`` (its tokenizer has a reading, which the
caller may take later) sets the reading's share aside although it carries no reading yet;
the decision then is the model-free stage of a two-stage decision, final when it is
``watermarked`` or ``not_watermarked`` and otherwise ``needs_reading``. The same documents
with their readings give the reading stage; both stages are this one function, and a text
the first stage flags is flagged by the second as well (its p-values only fall), so the
adaptive decision rejects only where the decision with a reading of every text would: the
family-wise error holds across both stages (docs/detector.md, "Adaptive reading").

``decide_many`` makes the same decision for many texts with their scoring in one
``detect_batch`` call and the scan's first windows in one batched pass; each result equals
``decide`` on that text alone. The plain Gamma test of each hypothesis, and the statistic
over every de-duplicated token as vLLM's detector computes it, stay on its ``detection`` and
come out under ``gamma`` in ``Decision.summary``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from detector.core.config import DEFAULT_THRESHOLD
from detector.decision.family import (
    FamilyVerdict,
    TestedHypothesis,
    VerdictResult,
    first_step_log10,
    flagged,
    localize_family,
)
from detector.decision.rule import model_free_level_log10
from detector.evidence.detection import Detection, Document, check_threshold, detect_batch
from detector.evidence.localize import (
    GAMMA_SHARE,
    MAX_SPANS,
    Localization,
    Span,
    first_windows,
    with_chars,
)

CORRECTION = "holm"
# Character offsets of one document's tokens (``[n, 2]``), or a callable that computes them
# (asked for only when a hypothesis of that document has a span), or None (no offsets).
Offsets = NDArray[np.int64] | Callable[[], NDArray[np.int64]] | None


@dataclass(frozen=True)
class Decision(VerdictResult):
    """The decision on one text: the family verdict (``family``: corrected p-value,
    three-way verdict, best hypothesis, each hypothesis's ``decided_by``), each hypothesis's
    localization and the accepted spans of all of them in text order."""

    family: FamilyVerdict
    localizations: tuple[Localization, ...]
    spans: tuple[Span, ...]
    documents: tuple[int, ...]  # hypothesis i was tested on document ``documents[i]``
    # hypothesis i has the reading stage's share of the level set aside (its text is or may
    # be read: ``detector.decision.rule.with_weighted``)
    reserved: tuple[bool, ...] = ()

    @property
    def read(self) -> bool:
        """Whether a model's reading joined the decision (a hypothesis has a weighted test)."""
        return any(h.detection.weighted is not None for h in self.family.hypotheses)

    @property
    def needs_reading(self) -> bool:
        """The model-free stage left the text undecided (``inconclusive``: neither watermarked
        nor cleared with the stated power) and a hypothesis's reading is still due: the
        reading stage may decide it. A decided text is never read."""
        if self.verdict != "inconclusive":
            return False
        return any(
            r and h.detection.weighted is None
            for r, h in zip(self.reserved, self.family.hypotheses, strict=False)
        )

    @property
    def hypotheses(self) -> tuple[TestedHypothesis, ...]:
        return self.family.hypotheses

    @property
    def decided_by(self) -> str:
        """The test the verdict rests on (its best hypothesis's); "" without hypotheses."""
        return "" if self.best is None else self.family.hypotheses[self.best].decided_by

    @property
    def best_detection(self) -> Detection | None:
        return None if self.best is None else self.family.hypotheses[self.best].detection

    def summary(self) -> dict[str, Any]:
        """The decision as JSON-ready data: the decision's figures at the top level, each
        hypothesis's plain Gamma test (and vLLM's statistic) under ``gamma``."""
        best = self.best_detection
        return {
            "verdict": self.verdict,
            "verdict_reason": self.verdict_reason,
            "verdict_tokens_needed": self.tokens_needed,
            "is_watermarked": self.is_watermarked,
            "p_value": self.p_value,
            "log10_p": self.log10_p,
            "decided_by": self.decided_by,
            "correction": self.family.correction,
            "threshold": self.family.threshold,
            "num_hypotheses": self.num_hypotheses,
            "best": self.best,
            "num_tokens": best.num_tokens if best else 0,
            "num_scored_tokens": best.num_scored_tokens if best else 0,
            "spans": [span_summary(s) for s in self.spans],
            "hypotheses": [
                {**hypothesis_summary(h, loc), "reading_reserved": r}
                for (h, loc), r in zip(self._pairs(), self._reserved(), strict=True)
            ],
            "gamma": gamma_summary(best) if best else None,
            "reading": "done" if self.read else ("pending" if self.needs_reading else "none"),
        }

    def _reserved(self) -> tuple[bool, ...]:
        return self.reserved or (False,) * len(self.family.hypotheses)

    def _pairs(self) -> list[tuple[TestedHypothesis, Localization]]:
        return list(zip(self.family.hypotheses, self.localizations, strict=True))


def gamma_line_log10(threshold: float, num_hypotheses: int, *, weighted: bool = False) -> float:
    """log10 of the p-value the strongest hypothesis's global Gamma test must reach, by
    itself, for ``decide`` to call the text watermarked: Holm's first step (``threshold / m``)
    on the document p-value ``min(p_global / w, p_scan / (1 - w))``, so ``w threshold / m``
    (``w = GAMMA_SHARE``), times the
    model-free stage's share ``1 - READING_SHARE`` when the reading's share is set aside
    (``weighted``: the text was or may be read; ``detector.decision.rule.with_weighted``).
    The evidence chart draws this line."""
    level = first_step_log10(threshold, num_hypotheses) + math.log10(GAMMA_SHARE)
    return level + model_free_level_log10(weighted)


def gamma_summary(d: Detection) -> dict[str, Any]:
    """The plain Gamma test of one hypothesis (global, before span scan and correction; with
    a model's reading, combined with the weighted test), and the statistic over every
    de-duplicated token as vLLM computes it. ``is_watermarked`` is that test's own flag, a
    figure beside the decision's, by the decision's one rule (``detector.decision.rule``)."""
    return {
        "score": d.score,
        "p_value": d.p_value,
        "log10_p": d.log10_p,
        "num_tokens": d.num_tokens,
        "num_scored_tokens": d.num_scored_tokens,
        "num_common_tokens": d.num_common_tokens,
        "is_watermarked": flagged(d),
        "vllm_score": d.vllm_score,
        "vllm_p_value": d.vllm_p_value,
        "vllm_log10_p": d.vllm_log10_p,
        "vllm_num_scored_tokens": d.vllm_num_scored_tokens,
    }


def hypothesis_summary(h: TestedHypothesis, loc: Localization) -> dict[str, Any]:
    d = h.detection
    out: dict[str, Any] = {
        "index": h.index,
        "name": h.name,
        "decision_log10_p": h.decision_log10_p,
        "adjusted_log10_p": h.adjusted_log10_p,
        "decided_by": h.decided_by,
        "localized_log10_p": loc.log10_p,
        "scan_log10_p": loc.scan_log10_p,
        "weighted_log10_p": None if d.weighted is None else d.weighted.log10_p,
        "gamma": gamma_summary(d),
    }
    return out


def span_summary(span: Span) -> dict[str, Any]:
    return {**span.summary(), "key_index": span.key_index, "key_name": span.key_name}


def decide(
    documents: Sequence[Document],
    *,
    names: Sequence[str | None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    max_spans: int = MAX_SPANS,
    offsets: Sequence[Offsets] | None = None,
    reserve: Sequence[bool] | None = None,
) -> Decision:
    """The decision on one text tested as ``documents`` (one per tokenizer). ``names``: one
    per hypothesis, in document order; ``offsets``: one per document (``Offsets``);
    ``reserve``: one per document, whether the reading stage's share of the threshold is set
    aside for it (its tokenizer has a reading; default: where a document carries one)."""
    return decide_many(
        [documents],
        names=names,
        threshold=threshold,
        max_spans=max_spans,
        offsets=None if offsets is None else [offsets],
        reserve=None if reserve is None else [reserve],
    )[0]


def decide_many(
    texts: Sequence[Sequence[Document]],
    *,
    names: Sequence[str | None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    max_spans: int = MAX_SPANS,
    offsets: Sequence[Sequence[Offsets]] | None = None,
    reserve: Sequence[Sequence[bool]] | None = None,
) -> list[Decision]:
    """``decide`` for many texts (``texts[t]``: text t's documents, the same configurations
    in the same order for every text), scored in one ``detect_batch`` call with the scan's
    first windows in one batched pass. ``names`` as for ``decide``, shared by every text;
    ``offsets`` and ``reserve`` one sequence per text, as for ``decide``."""
    check_threshold(threshold)
    if offsets is not None and len(offsets) != len(texts):
        raise ValueError("one offsets sequence per text is needed")
    if reserve is not None and len(reserve) != len(texts):
        raise ValueError("one reserve sequence per text is needed")
    flat = [doc for docs in texts for doc in docs]
    found = detect_batch(flat, threshold)
    per_text: list[list[list[Detection]]] = []
    at = 0
    for docs in texts:
        per_text.append(found[at : at + len(docs)])
        at += len(docs)
    configs = [[c for doc in docs for c in doc.configs] for docs in texts]
    windows = first_windows(
        [d for f in per_text for group in f for d in group], [c for cs in configs for c in cs]
    )
    out, at = [], 0
    for t, (docs, f) in enumerate(zip(texts, per_text, strict=True)):
        m = len(configs[t])
        out.append(
            _decision(
                docs,
                f,
                names,
                threshold,
                max_spans,
                windows[at : at + m],
                None if offsets is None else offsets[t],
                None if reserve is None else reserve[t],
            )
        )
        at += m
    return out


def _decision(
    docs: Sequence[Document],
    found: list[list[Detection]],
    names: Sequence[str | None] | None,
    threshold: float,
    max_spans: int,
    windows: Sequence[Any],
    offsets: Sequence[Offsets] | None,
    reserve: Sequence[bool] | None,
) -> Decision:
    detections = [d for group in found for d in group]
    configs = [c for doc in docs for c in doc.configs]
    if not configs:
        raise ValueError("at least one key is needed")
    names = [c.name for c in configs] if names is None else list(names)
    if len(names) != len(configs):
        raise ValueError("one name per hypothesis is needed")
    if offsets is not None and len(offsets) != len(docs):
        raise ValueError("one offsets entry per document is needed")
    of = tuple(g for g, doc in enumerate(docs) for _ in doc.configs)
    if reserve is not None and len(reserve) != len(docs):
        raise ValueError("one reserve flag per document is needed")
    held = tuple(
        bool(reserve[g]) if reserve is not None else docs[g].expected_scores is not None for g in of
    )
    verdict, locs = localize_family(
        detections,
        configs,
        names=names,
        threshold=threshold,
        correction=CORRECTION,
        max_spans=max_spans,
        first_windows=windows,
        reserved=held,
    )
    got: dict[int, NDArray[np.int64] | None] = {}
    spans: list[Span] = []
    for i, loc in enumerate(locs):
        for span in loc.spans:
            g = of[i]
            if g not in got:
                source = None if offsets is None else offsets[g]
                got[g] = source() if callable(source) else source
            table = got[g]
            if table is None:
                spans.append(_named(span, i, names[i]))
            else:
                spans.append(with_chars(span, table, i, names[i]))
    spans.sort(key=lambda s: (s.start, s.key_index))
    return Decision(
        family=verdict, localizations=locs, spans=tuple(spans), documents=of, reserved=held
    )


def _named(span: Span, index: int, name: str | None) -> Span:
    return replace(span, key_index=index, key_name=name)
