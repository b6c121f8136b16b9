"""A family of hypotheses (key configurations) tested on one text, corrected together.

``combine`` takes one ``Detection`` per hypothesis, corrects their decision p-values for their
number (Holm or Bonferroni) and gives the family's three-way verdict: ``not_watermarked`` only
when every tested key, had it watermarked the text, would have been caught.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from detector.core.config import DEFAULT_THRESHOLD
from detector.core.stats import CORRECTIONS
from detector.evidence.detection import LOG10_2, Detection, check_threshold
from detector.evidence.power import ThreeWay, decide, power_model


@dataclass(frozen=True)
class Hypothesis:
    """One tested key configuration and its result; ``adjusted_log10_p`` is family-corrected.
    ``decided_by``: the test its decision p-value rests on, ``gamma`` (the Gamma test, with
    the span scan when localized) or ``weighted`` (the model-assisted test).
    ``decision_log10_p``: its own decision p-value before the family correction."""

    index: int
    name: str | None
    detection: Detection
    adjusted_log10_p: float
    decided_by: str = "gamma"
    decision_log10_p: float = 0.0


@dataclass(frozen=True)
class Verdict:
    """A family of hypotheses tested on one text, corrected together for their number.

    The family verdict rests on the hypothesis with the smallest corrected p-value
    (``best``): watermarked when that p-value is at most ``threshold`` and it scored at
    least one token. ``verdict`` is three-way (``detector.evidence.power``): ``not_watermarked``
    only
    when every hypothesis, had its key watermarked the text, would have been detected with
    power >= 0.8 at the level the correction asks for; ``inconclusive`` otherwise."""

    hypotheses: tuple[Hypothesis, ...]
    correction: str
    threshold: float
    is_watermarked: bool
    best: int | None
    p_value: float
    log10_p: float
    verdict: str = "inconclusive"
    verdict_reason: str = ""
    power: float | None = None  # of the weakest hypothesis; None when watermarked
    tokens_needed: int | None = None  # its scored tokens for 80% power at the corrected level

    @property
    def num_hypotheses(self) -> int:
        return len(self.hypotheses)


class VerdictResult:
    """A result that carries a family verdict (``family``) and answers for it (verdict,
    verdict_reason, is_watermarked, best, p_value, log10_p, num_hypotheses): text
    localizations and the web layer's results."""

    family: Verdict

    @property
    def verdict(self) -> str:
        return self.family.verdict

    @property
    def verdict_reason(self) -> str:
        return self.family.verdict_reason

    @property
    def tokens_needed(self) -> int | None:
        return self.family.tokens_needed

    @property
    def is_watermarked(self) -> bool:
        return self.family.is_watermarked

    @property
    def best(self) -> int | None:
        return self.family.best

    @property
    def p_value(self) -> float:
        return self.family.p_value

    @property
    def log10_p(self) -> float:
        return self.family.log10_p

    @property
    def num_hypotheses(self) -> int:
        return self.family.num_hypotheses


def correct(log10_ps: Sequence[float], correction: str = "holm") -> NDArray[np.float64]:
    """Family-wise corrected log10 p-values (``holm`` or ``bonferroni``)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; expected one of {list(CORRECTIONS)}")
    return CORRECTIONS[correction](np.asarray(log10_ps, np.float64))


def first_step_log10(threshold: float, num_hypotheses: int) -> float:
    """log10 of the p-value the strongest of ``num_hypotheses`` hypotheses must reach for a
    family verdict at ``threshold``: ``threshold / m``, the first step of Holm and Bonferroni
    alike."""
    check_threshold(threshold)
    return math.log10(threshold) - math.log10(max(num_hypotheses, 1))


def combine(
    detections: Sequence[Detection],
    *,
    names: Sequence[str | None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    correction: str = "holm",
    tests_per_hypothesis: int = 1,
) -> Verdict:
    """Correct a family of detections (hypothesis i is ``detections[i]``, named ``names[i]``).
    ``tests_per_hypothesis``: how many tests each hypothesis's p-value already combines by
    Bonferroni (2 for localization: global and scan), for the power of the three-way verdict."""
    check_threshold(threshold)
    names = list(names) if names is not None else [None] * len(detections)
    if len(names) != len(detections):
        raise ValueError("one name per detection is needed")
    adjusted = correct([d.decision_log10_p for d in detections], correction)
    best = int(np.argmin(adjusted)) if adjusted.size else None
    best_lp = float(adjusted[best]) if best is not None else 0.0
    scored = best is not None and detections[best].num_scored_tokens > 0
    is_watermarked = bool(scored and best_lp <= math.log10(threshold))
    level = first_step_log10(threshold, len(detections)) - math.log10(tests_per_hypothesis)
    three = _family_three_way(detections, names, is_watermarked, 10.0**best_lp, threshold, level)
    return Verdict(
        hypotheses=tuple(
            Hypothesis(i, name, d, float(a), d.decided_by, d.decision_log10_p)
            for i, (name, d, a) in enumerate(zip(names, detections, adjusted, strict=True))
        ),
        correction=correction,
        threshold=threshold,
        is_watermarked=is_watermarked,
        best=best,
        p_value=10.0**best_lp,
        log10_p=best_lp,
        verdict=three.verdict,
        verdict_reason=three.reason,
        power=three.power,
        tokens_needed=three.tokens_needed,
    )


def _family_three_way(
    detections: Sequence[Detection],
    names: Sequence[str | None],
    detected: bool,
    p_value: float,
    threshold: float,
    log10_level: float,
) -> ThreeWay:
    """The family's three-way verdict: decided by the hypothesis with the least power (a text
    is clear only when none of the tested keys could have gone unnoticed)."""
    if detected or not detections:
        return decide(
            detected=detected,
            p_value=p_value,
            threshold=threshold,
            num_scored=0,
            model=power_model(),
            log10_level=log10_level,
        )
    weakest: ThreeWay | None = None
    for d, name in zip(detections, names, strict=True):
        label = f"key {name}" if name and len(detections) > 1 else ""
        got = decide(
            detected=False,
            p_value=p_value,
            threshold=threshold,
            num_scored=d.num_scored_tokens,
            model=d.power_model,
            # the Gamma test's share of the level (halved when the weighted test also runs)
            log10_level=log10_level - (LOG10_2 if d.weighted is not None else 0.0),
            label=label,
        )
        if weakest is None or (got.power or 0.0) < (weakest.power or 0.0):
            weakest = got
    assert weakest is not None
    return weakest
