"""Where the watermark is: spans of a mixed document that carry a key's watermark.

Procedure, for one key (each step's p-value stays valid for everything before it):

1. Score the text as ``detect`` does (de-duplicated, Exp(1) under the null) and take the global
   Gamma test's p-value ``p_g``.
2. Scan the scored tokens for the window with the smallest Gamma p-value
(``detector.evidence.scan``:
   coarse grid, then the two ends refined). Its calibrated p-value ``p_1`` comes from the
   simulated null of that whole search for this number of scored tokens.
3. The document p-value is ``p_doc = min(1, p_g / w, p_1 / (1 - w))`` with ``w =
   GAMMA_SHARE`` (weighted Bonferroni over the two tests: the Gamma sum is tested at ``w``
   times the threshold, the scan at the rest), so a document without watermark reaches the
   threshold with probability <= the threshold (the verdict is the decision's:
   ``detector.decision.family.localize_family``).
4. Accept the window as a span when ``p_1 / (1 - w) <= threshold``; block it (and
   ``context_width`` scored tokens on each side, where a refined end may leave a few
   watermarked tokens), scan what is left, and repeat, at most ``max_spans`` times. Span k
   reports ``min(1, max(p_1..p_k) / (1 - w))``: under the null nothing is reported unless
   ``p_1 <= (1 - w) threshold``, and scanning fewer free tokens with the table of all ``n``
   can only overstate a later span's p-value.

Scores of ``dual_key_gumbel`` are a weighted sum of two Exp(1) variables; their exact survival
function maps them back to Exp(1) before the scan, so one table serves both algorithms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from detector.core.config import DEFAULT_THRESHOLD, KeyConfig, as_key_config
from detector.core.stats import gamma_upper_log10
from detector.evidence import scan
from detector.evidence.detection import Detection, detect_config

MAX_SPANS = 8
# The Gamma sum's share of the document test's level; the span scan gets the rest. Chosen
# from each split's false-positive rates over 400 keys, its power on short code answers and
# on a span planted in a long human document (``benchmarks/bench_split.py``,
# docs/benchmarks-power.md): 0.7 finds 100-token code answers as often as the Gamma sum alone
# and keeps nearly all of what the scan finds in a document (16% against 18% at 0.5).
GAMMA_SHARE = 0.7
# Every split the product has decided with, the current first: a signed report is verified
# against the one its figures were decided with (0.5 until 2026-12-07).
GAMMA_SHARES_USED = (GAMMA_SHARE, 0.5)


@dataclass(frozen=True)
class Span:
    """Token positions ``[start, end)`` that carry the watermark; p-values family-adjusted."""

    start: int
    end: int
    num_scored_tokens: int
    score: float
    p_value: float
    log10_p: float
    start_char: int | None = None  # character offsets ``[start_char, end_char)`` (text input)
    end_char: int | None = None
    key_index: int = 0  # which tested key configuration (``detector.decision.decide``)
    key_name: str | None = None
    window_log10_p: float = 0.0  # the span's own Gamma p-value, before any adjustment

    def summary(self) -> dict[str, Any]:
        return {
            "start_token": self.start,
            "end_token": self.end,
            "start_char": self.start_char,
            "end_char": self.end_char,
            "num_scored_tokens": self.num_scored_tokens,
            "score": self.score,
            "p_value": self.p_value,
            "log10_p": self.log10_p,
        }


@dataclass(frozen=True)
class Localization:
    """The localized test of one text under one key."""

    spans: list[Span]
    p_value: float  # document level: global test and scan, Bonferroni-combined
    log10_p: float
    global_log10_p: float
    scan_log10_p: float  # calibrated p of the best window (before the factor 2)
    threshold: float
    detection: Detection = field(repr=False)

    def summary(self) -> dict[str, Any]:
        return {
            "p_value": self.p_value,
            "log10_p": self.log10_p,
            "global_log10_p": self.global_log10_p,
            "scan_log10_p": self.scan_log10_p,
            "spans": [s.summary() for s in self.spans],
        }


def exp_scores(detection: Detection, config: KeyConfig) -> NDArray[np.float64]:
    """The scored tokens' scores as Exp(1) variables under the null (``[num_scored_tokens]``)."""
    s = detection.token_scores[detection.scored_mask]
    if config.algorithm == "gumbel" or config.alpha in (0.0, 1.0):
        return s
    a = min(config.alpha, 1.0 - config.alpha)
    r1, r2 = 1.0 / (1.0 - a), 1.0 / a  # rates of the two weighted exponentials, r2 > r1
    if r2 - r1 < 1e-6:  # alpha = 1/2: Gamma(2, 1/2)
        return 2.0 * s - np.log1p(2.0 * s)
    # P[S > x] = (r2 e^{-r1 x} - r1 e^{-r2 x}) / (r2 - r1); its -log, without overflow
    return r1 * s - np.log1p(-(r1 / r2) * np.exp(-(r2 - r1) * s)) + math.log((r2 - r1) / r2)


def _log10_pair(log10_p: float) -> tuple[float, float]:
    log10_p = min(0.0, log10_p)
    return 10.0**log10_p, log10_p


def _strongest_part(exp: NDArray, cum: NDArray, window: scan.Window) -> tuple[int, int]:
    """``window``, or its stronger side when a human stretch splits it (repeatedly); the other
    side stays free for the next scan, which tests it on its own."""
    lo, hi = window.start, window.stop
    while (gap := scan.human_stretch(exp, scan.Window(lo, hi, 0.0))) is not None:
        left = gamma_upper_log10(float(gap[0] - lo), float(cum[gap[0]] - cum[lo]))
        right = gamma_upper_log10(float(hi - gap[1]), float(cum[hi] - cum[gap[1]]))
        lo, hi = (lo, gap[0]) if left <= right else (gap[1], hi)
    return lo, hi


def _longest_free_run(blocked: NDArray[np.bool_]) -> int:
    """Length of the longest run of unblocked positions."""
    edges = np.flatnonzero(np.diff(np.concatenate([[True], blocked, [True]]).astype(np.int8)))
    return int((edges[1::2] - edges[::2]).max(initial=0))


def first_windows(
    detections: Sequence[Detection], configs: Sequence[KeyConfig]
) -> list[scan.Window | None]:
    """The scan's first window of each (detection, configuration) pair, in one batched pass;
    pass them on as ``detector.decision.family.localize_family(..., first_windows=...)``."""
    return scan.best_windows([exp_scores(d, c) for d, c in zip(detections, configs, strict=True)])


def localize_detection(
    detection: Detection,
    config: KeyConfig,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    max_spans: int = MAX_SPANS,
    span_factor: float = 1.0,
    first_window: scan.Window | None = None,
    gamma_share: float | None = None,
) -> Localization:
    """Localize from an existing ``Detection``. ``span_factor`` multiplies the spans' p-values
    (Bonferroni over several keys; 1 for one key); the document p-value is left for the
    caller's family correction. ``first_window``: the scan's first window when the caller
    computed it already (``scan.best_windows`` over many texts at once); ``None``: scanned here
    (where a batch found no window, the scan here finds none as quickly). ``gamma_share``: the
    split of the level (None: ``GAMMA_SHARE``; a signed report's verifier passes the split a
    report was decided with)."""
    exp = exp_scores(detection, config)
    n = exp.shape[0]
    blocked = np.zeros(n, np.bool_)
    share = GAMMA_SHARE if gamma_share is None else gamma_share
    log_span = math.log10(span_factor) - math.log10(1.0 - share)
    spans: list[Span] = []
    first = 0.0
    running = -math.inf  # max of scan log10 p over the spans so far
    positions: NDArray[np.int64] | None = None
    cum: NDArray[np.float64] | None = None
    while len(spans) < max_spans:
        if spans and _longest_free_run(blocked) < scan.MIN_WINDOW:
            break
        window = first_window if not spans else None
        if window is None:
            window = scan.best_window(exp, blocked)
        if window is None:
            break
        scan_lp = scan.scan_log10_p(window.log10_p, n)
        if not spans:
            first = scan_lp
        running = max(running, scan_lp)
        adjusted = min(0.0, running + log_span)
        if adjusted > math.log10(threshold):
            break
        if cum is None or positions is None:
            cum = np.concatenate([[0.0], np.cumsum(exp)])
            positions = np.flatnonzero(detection.scored_mask)
        lo, hi = _strongest_part(exp, cum, window)
        spans.append(
            Span(
                start=int(positions[lo]),
                end=int(positions[hi - 1]) + 1,
                num_scored_tokens=hi - lo,
                score=float(cum[hi] - cum[lo]),
                p_value=10.0**adjusted,
                log10_p=adjusted,
                window_log10_p=gamma_upper_log10(float(hi - lo), float(cum[hi] - cum[lo])),
            )
        )
        margin = config.context_width
        blocked[max(0, lo - margin) : min(n, hi + margin)] = True
    global_lp = detection.log10_p
    doc_lp = document_log10_p(global_lp, first, share) if n else 0.0
    p, lp = _log10_pair(doc_lp)
    return Localization(
        spans=sorted(spans, key=lambda s: s.start),
        p_value=p,
        log10_p=lp,
        global_log10_p=global_lp,
        scan_log10_p=first,
        threshold=threshold,
        detection=detection,
    )


def document_log10_p(
    global_log10_p: float, scan_log10_p: float, gamma_share: float | None = None
) -> float:
    """The document p-value in log10: ``min(1, p_g / w, p_scan / (1 - w))``, ``w =
    gamma_share`` (None: ``GAMMA_SHARE``)."""
    if gamma_share is None:
        gamma_share = GAMMA_SHARE
    if not 0.0 < gamma_share < 1.0:
        raise ValueError("gamma_share must lie in (0, 1)")
    return min(
        0.0,
        global_log10_p - math.log10(gamma_share),
        scan_log10_p - math.log10(1.0 - gamma_share),
    )


def localize_ids(
    token_ids: ArrayLike,
    key: int | KeyConfig,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    max_spans: int = MAX_SPANS,
) -> Localization:
    """Find the spans of ``token_ids`` that carry ``key``'s watermark."""
    config = as_key_config(key)
    detection = detect_config(token_ids, config, threshold)
    return localize_detection(detection, config, threshold=threshold, max_spans=max_spans)


def char_range(offsets: NDArray[np.int64], start: int, end: int) -> tuple[int, int]:
    """Character offsets ``[start_char, end_char)`` of tokens ``[start, end)``."""
    return int(offsets[start:end, 0].min()), int(offsets[start:end, 1].max())


def with_chars(span: Span, offsets: NDArray[np.int64], index: int, name: str | None) -> Span:
    """``span`` with its character offsets and the hypothesis it belongs to."""
    a, b = char_range(offsets, span.start, span.end)
    return replace(span, start_char=a, end_char=b, key_index=index, key_name=name)
