"""Scoring a text against registered keys: the one place the web product calls the detector.

Keys are grouped by tokenizer: each group tokenizes the text once (``detect_text``). Every
hypothesis is then localized (``detector.localize``: the global test and the span scan,
Bonferroni-combined), and the hypotheses' document p-values of all groups are Holm-corrected
together, so the verdict accounts for every (key x tokenizer) pair tested. Span p-values carry
a Bonferroni factor for the number of hypotheses.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from detector.config import KeyConfig
from detector.detect import Detection, TextDetection, detect_batch, detect_text
from detector.localize import Localization, char_range, localize_detection
from detector.stats import dual_key_sf, gamma_sf, holm
from detector.tokenizers import Tokenizer as LoadedTokenizer
from detector.tokenizers import load_tokenizer
from provenance.keys.crypto import KeyDecryptionError
from provenance.keys.models import Tokenizer, WatermarkKey
from provenance.keys.selectors import key_config

CHART_POINTS = 80  # points of the cumulative-evidence chart; each costs one gamma tail


class ScoringError(Exception):
    """Scoring cannot proceed (for a reason other than a transient fault); safe to show."""


@dataclass(frozen=True)
class KeyGroup:
    """Keys sharing one tokenizer, decrypted and ready (built once per task)."""

    tokenizer: Tokenizer
    loaded: LoadedTokenizer
    keys: tuple[WatermarkKey, ...]
    configs: tuple[KeyConfig, ...]

    def __repr__(self) -> str:  # configs hold key values: never let them reach a log line
        return f"<KeyGroup tokenizer={self.tokenizer.name!r} keys={len(self.keys)}>"


@dataclass(frozen=True)
class HypothesisResult:
    index: int
    key: WatermarkKey
    tokenizer: Tokenizer
    detection: Detection
    adjusted_log10_p: float
    localization: Localization | None = None


@dataclass(frozen=True)
class TextResult:
    hypotheses: tuple[HypothesisResult, ...]
    is_watermarked: bool
    best: int | None
    p_value: float
    log10_p: float
    token_data: dict[str, Any] | None
    elapsed_ms: float
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


def prepare_keys(keys: list[WatermarkKey]) -> list[KeyGroup]:
    """Group keys by tokenizer (first-seen order) and decrypt them."""
    by_tokenizer: dict[int, list[WatermarkKey]] = {}
    for key in keys:
        by_tokenizer.setdefault(key.tokenizer_id, []).append(key)
    groups = []
    for members in by_tokenizer.values():
        tokenizer = members[0].tokenizer
        groups.append(
            KeyGroup(
                tokenizer=tokenizer,
                loaded=tokenizer_load(tokenizer),
                keys=tuple(members),
                configs=tuple(_config(key) for key in members),
            )
        )
    return groups


def _config(key: WatermarkKey) -> KeyConfig:
    try:
        return key_config(key)
    except KeyDecryptionError:
        raise ScoringError(f"key {key.name!r} does not decrypt with the configured KEK") from None


Raw = list[tuple[KeyGroup, int, Detection]]  # (group, position in group, detection)


def score_text(
    text: str, groups: list[KeyGroup], *, threshold: float, with_tokens: bool = True
) -> TextResult:
    """Test ``text`` under every prepared key; Holm-correct over all of them."""
    start = time.perf_counter()
    raw: Raw = []
    found_by_group: dict[int, TextDetection] = {}
    for g, group in enumerate(groups):
        found = detect_text(text, group.loaded, list(group.configs), threshold=threshold)
        found_by_group[g] = found
        raw.extend((group, pos, h.detection) for pos, h in enumerate(found.hypotheses))
    result = _combine(raw, threshold)
    spans = _spans(result, lambda h: found_by_group[groups.index(_group_of(raw, h))].offsets)
    result = replace(result, spans=spans)
    if with_tokens and result.best is not None:
        group, pos, detection = raw[result.best]
        # Offsets are computed lazily by the detector: only the heatmap pays for them.
        found = found_by_group[groups.index(group)]
        tokens = heatmap_data(detection, found.offsets, group.configs[pos])
        result = replace(result, token_data=tokens)
    return replace(result, elapsed_ms=(time.perf_counter() - start) * 1000.0)


def _group_of(raw: Raw, h: HypothesisResult) -> KeyGroup:
    return raw[h.index][0]


def _spans(result: TextResult, offsets_of: Any) -> tuple[dict[str, Any], ...]:
    """Span rows of every hypothesis (character offsets from ``offsets_of(hypothesis)``)."""
    rows = []
    for h in result.hypotheses:
        if h.localization is None or not h.localization.spans:
            continue
        offsets = offsets_of(h)
        for s in h.localization.spans:
            start_char, end_char = char_range(offsets, s.start, s.end)
            rows.append(
                {
                    "start_token": s.start,
                    "end_token": s.end,
                    "start_char": start_char,
                    "end_char": end_char,
                    "num_scored_tokens": s.num_scored_tokens,
                    "p_value": s.p_value,
                    "log10_p": round(s.log10_p, 6),
                    "key_id": str(h.key.id),
                    "key_name": h.key.name,
                }
            )
    return tuple(sorted(rows, key=lambda r: (r["start_token"], r["key_id"])))


def score_texts(texts: list[str], groups: list[KeyGroup], *, threshold: float) -> list[TextResult]:
    """The audit path: like ``score_text`` for many texts (no heatmaps). Each key group
    scores all texts in one ``detect_batch`` call: one kernel launch per group on CUDA,
    the same numpy path as ``detect_text`` on the CPU."""
    start = time.perf_counter()
    raws: list[Raw] = [[] for _ in texts]
    for group in groups:
        k = len(group.configs)
        ids = [group.loaded.encode(text) for text in texts]
        docs = [doc for doc in ids for _ in range(k)]  # the same array object: masks shared
        found = detect_batch(docs, list(group.configs) * len(ids), threshold)
        for i, raw in enumerate(raws):
            raw.extend((group, pos, found[i * k + pos]) for pos in range(k))
    results = [_combine(raw, threshold) for raw in raws]
    for i, (text, raw) in enumerate(zip(texts, raws, strict=True)):
        if any(h.localization and h.localization.spans for h in results[i].hypotheses):
            offsets = {id(g): g.loaded.encode_with_offsets(text)[1] for g, _, _ in raw}
            spans = _spans(results[i], lambda h, r=raw, o=offsets: o[id(r[h.index][0])])
            results[i] = replace(results[i], spans=spans)
    each_ms = (time.perf_counter() - start) * 1000.0 / max(len(texts), 1)
    return [replace(result, elapsed_ms=each_ms) for result in results]


def _combine(raw: Raw, threshold: float) -> TextResult:
    """Localize every hypothesis, then Holm over their document p-values; the family-wise
    verdict rests on the strongest one."""
    m = float(max(len(raw), 1))
    locs = [
        localize_detection(d, group.configs[pos], threshold=threshold, span_factor=m)
        for group, pos, d in raw
    ]
    adjusted = holm([loc.log10_p for loc in locs])
    hypotheses = tuple(
        HypothesisResult(
            i, group.keys[pos], group.tokenizer, detection, float(adjusted[i]), locs[i]
        )
        for i, (group, pos, detection) in enumerate(raw)
    )
    best = int(np.argmin(adjusted)) if raw else None
    best_lp = float(adjusted[best]) if best is not None else 0.0
    verdict = bool(
        best is not None
        and hypotheses[best].detection.num_scored_tokens > 0
        and best_lp <= math.log10(threshold)
    )
    return TextResult(
        hypotheses=hypotheses,
        is_watermarked=verdict,
        best=best,
        p_value=10.0**best_lp,
        log10_p=best_lp,
        token_data=None,
        elapsed_ms=0.0,
    )


def heatmap_data(detection: Detection, offsets: np.ndarray, config: KeyConfig) -> dict[str, Any]:
    """Per-token scores with character offsets, plus the cumulative evidence along the text."""
    return {
        "context_width": config.context_width,
        "offsets": offsets.astype(int).tolist(),
        "scores": [round(float(s), 4) for s in detection.token_scores],
        "scored": [bool(m) for m in detection.scored_mask],
        "chart": cumulative_evidence(detection, config),
    }


def cumulative_evidence(detection: Detection, config: KeyConfig) -> list[list[float]]:
    """(token index, log10 p of the tokens up to it) at up to CHART_POINTS positions."""
    n = detection.num_tokens
    if n == 0:
        return []
    sums = np.cumsum(detection.token_scores)
    counts = np.cumsum(detection.scored_mask)
    picks = np.unique(np.linspace(0, n - 1, min(n, CHART_POINTS)).round().astype(int))
    points = []
    for i in picks:
        if config.algorithm == "dual_key_gumbel":
            _, lp = dual_key_sf(float(sums[i]), int(counts[i]), config.alpha)
        else:
            _, lp = gamma_sf(float(sums[i]), int(counts[i]))
        points.append([int(i), round(lp, 3)])
    return points
