"""A family of hypotheses (key configurations) tested on one text, corrected together.

``family_verdict`` takes one ``Detection`` per hypothesis, corrects their decision p-values
(``detector.decision.rule.with_weighted``) for their number (Holm or Bonferroni) and gives the
family's three-way verdict: ``not_watermarked`` only when every tested key, had it watermarked
the text, would have been caught. ``localize_family`` does the same on the localized document
p-values (global test and span scan), the decision ``detector.decision.decide`` makes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from detector.core.config import DEFAULT_THRESHOLD, KeyConfig
from detector.core.stats import CORRECTIONS
from detector.decision.rule import decided_by, flags, model_free_level_log10, with_weighted
from detector.evidence import scan
from detector.evidence.detection import Detection, check_threshold
from detector.evidence.localize import (
    GAMMA_SHARE,
    MAX_SPANS,
    Localization,
    localize_detection,
)
from detector.evidence.power import ThreeWay, power_model, three_way


@dataclass(frozen=True)
class TestedHypothesis:
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
class FamilyVerdict:
    """A family of hypotheses tested on one text, corrected together for their number.

    The family verdict rests on the hypothesis with the smallest corrected p-value
    (``best``): watermarked when that p-value is at most ``threshold`` and it scored at
    least one token. ``verdict`` is three-way (``detector.evidence.power``): ``not_watermarked``
    only
    when every hypothesis, had its key watermarked the text, would have been detected with
    power >= 0.8 at the level the correction asks for; ``inconclusive`` otherwise."""

    hypotheses: tuple[TestedHypothesis, ...]
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

    family: FamilyVerdict

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


def family_verdict(
    detections: Sequence[Detection],
    *,
    names: Sequence[str | None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    correction: str = "holm",
    gamma_share: float = 1.0,
    reserved: Sequence[bool] | None = None,
) -> FamilyVerdict:
    """Correct a family of detections (hypothesis i is ``detections[i]``, named ``names[i]``).
    ``gamma_share``: the share of each hypothesis's level its Gamma test gets in the p-value
    it carries (``detector.evidence.localize.GAMMA_SHARE`` for a localized p-value, which
    weighs the Gamma test and the span scan), for the power of the three-way verdict.
    ``reserved[i]``: hypothesis i's text is or may be read, so the reading stage's share of
    the level is set aside for it (``detector.decision.rule.with_weighted``)."""
    check_threshold(threshold)
    names = list(names) if names is not None else [None] * len(detections)
    if len(names) != len(detections):
        raise ValueError("one name per detection is needed")
    held = [False] * len(detections) if reserved is None else [bool(r) for r in reserved]
    if len(held) != len(detections):
        raise ValueError("one reserved flag per detection is needed")
    own = [decision_log10_p(d, r) for d, r in zip(detections, held, strict=True)]
    adjusted = correct(own, correction)
    best = int(np.argmin(adjusted)) if adjusted.size else None
    best_lp = float(adjusted[best]) if best is not None else 0.0
    scored = 0 if best is None else detections[best].num_scored_tokens
    is_watermarked = flags(best_lp, threshold, scored)
    if not 0.0 < gamma_share <= 1.0:
        raise ValueError("gamma_share must lie in (0, 1]")
    level = first_step_log10(threshold, len(detections)) + math.log10(gamma_share)
    three = _family_three_way(
        detections, names, held, is_watermarked, 10.0**best_lp, threshold, level
    )
    return FamilyVerdict(
        hypotheses=tuple(
            TestedHypothesis(i, name, d, float(a), decided_by(d.log10_p, _weighted_log10_p(d)), lp)
            for i, (name, d, a, lp) in enumerate(zip(names, detections, adjusted, own, strict=True))
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
    reserved: Sequence[bool],
    detected: bool,
    p_value: float,
    threshold: float,
    log10_level: float,
) -> ThreeWay:
    """The family's three-way verdict: decided by the hypothesis with the least power (a text
    is clear only when none of the tested keys could have gone unnoticed)."""
    if detected or not detections:
        return three_way(
            detected=detected,
            p_value=p_value,
            threshold=threshold,
            num_scored=0,
            model=power_model(),
            log10_level=log10_level,
        )
    weakest: ThreeWay | None = None
    for d, name, held in zip(detections, names, reserved, strict=True):
        label = f"key {name}" if name and len(detections) > 1 else ""
        got = three_way(
            detected=False,
            p_value=p_value,
            threshold=threshold,
            num_scored=d.num_scored_tokens,
            model=d.power_model,
            # the Gamma test's share of the level (the model-free stage's share when a
            # reading is or may be taken)
            log10_level=log10_level + model_free_level_log10(held or d.weighted is not None),
            label=label,
        )
        if weakest is None or (got.power or 0.0) < (weakest.power or 0.0):
            weakest = got
    assert weakest is not None
    return weakest


def localize_family(
    detections: Sequence[Detection],
    configs: Sequence[KeyConfig],
    *,
    names: Sequence[str | None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    correction: str = "holm",
    max_spans: int = MAX_SPANS,
    first_windows: Sequence[scan.Window | None] | None = None,
    reserved: Sequence[bool] | None = None,
) -> tuple[FamilyVerdict, tuple[Localization, ...]]:
    """The localized verdict of a family of hypotheses on one text: every hypothesis is
    localized, their document p-values are corrected together (``correction``), and span
    p-values carry a Bonferroni factor for the number of hypotheses. The verdict's hypotheses
    keep their own global detections; ``adjusted_log10_p`` is the corrected document p.
    ``first_windows``: each hypothesis's first scan window, from ``first_windows``."""
    m = float(max(len(detections), 1))
    firsts = [None] * len(detections) if first_windows is None else first_windows
    locs = tuple(
        localize_detection(
            d, c, threshold=threshold, max_spans=max_spans, span_factor=m, first_window=w
        )
        for d, c, w in zip(detections, configs, firsts, strict=True)
    )
    proxies = [
        replace(d, log10_p=loc.log10_p, p_value=loc.p_value)
        for d, loc in zip(detections, locs, strict=True)
    ]
    verdict = family_verdict(
        proxies,
        names=names,
        threshold=threshold,
        correction=correction,
        gamma_share=GAMMA_SHARE,
        reserved=reserved,
    )
    hypotheses = tuple(
        replace(h, detection=d) for h, d in zip(verdict.hypotheses, detections, strict=True)
    )
    return replace(verdict, hypotheses=hypotheses), locs


def _weighted_log10_p(detection: Detection) -> float | None:
    return None if detection.weighted is None else detection.weighted.log10_p


def decision_log10_p(detection: Detection, reserved: bool = False) -> float:
    """One detection's own decision p-value: its Gamma test's, joined by the weighted test's
    when a model read the text (``detector.decision.rule.with_weighted``; ``reserved``: the
    reading's share is set aside although no reading is there)."""
    return with_weighted(detection.log10_p, _weighted_log10_p(detection), reserved=reserved)


def flagged(detection: Detection, threshold: float | None = None) -> bool:
    """Whether one detection, on its own (no span scan, no family correction), meets the
    rule (``detector.decision.rule.flags``) at ``threshold`` (default: the detection's own)."""
    level = detection.threshold if threshold is None else threshold
    return flags(decision_log10_p(detection), level, detection.num_scored_tokens)
