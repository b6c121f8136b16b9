from __future__ import annotations

import math

import numpy as np
import pytest

from detector.core.config import KeyConfig
from detector.core.stats import gamma_sf
from detector.decision.rule import flags
from detector.evidence.detection import Detection, detect_config
from detector.evidence.localize import (
    GAMMA_SHARE,
    Localization,
    Span,
    first_windows,
    localize_detection,
    localize_ids,
)
from tests.detector.planted import human_ids, plant

KEY = 0x5EED_0F_5A4A
OTHER = 0xBAD_C0DE


def _flagged(loc) -> bool:
    """The decision's rule on one key's localized document p-value."""
    return flags(loc.log10_p, loc.threshold, loc.detection.num_scored_tokens)


def _errors(found: Localization, planted: list[tuple[int, int]]) -> list[int]:
    """Boundary errors (start and end) of the reported span that overlaps each planted one."""
    out = []
    for a, b in planted:
        hits = [s for s in found.spans if s.start < b and s.end > a]
        assert hits, f"planted span {a}-{b} not found in {found.spans}"
        best = max(hits, key=lambda s: min(s.end, b) - max(s.start, a))
        out += [abs(best.start - a), abs(best.end - b)]
    return out


@pytest.mark.parametrize("length", [60, 100, 200, 400])
def test_a_planted_span_is_found_with_tight_boundaries(length):
    errors = []
    for seed in range(6):
        doc = plant(KEY, 1000 + 400 * seed, [length], seed=seed + length)
        found = localize_ids(doc.ids, KEY)
        assert _flagged(found) and len(found.spans) == 1
        errors += _errors(found, doc.spans)
    assert np.median(errors) <= 20


def test_two_and_three_spans_in_one_document_are_each_found():
    errors = []
    for seed, lengths in enumerate([[150, 300], [120, 200, 400], [300, 100, 250]]):
        doc = plant(KEY, 2500, lengths, seed=100 + seed)
        found = localize_ids(doc.ids, KEY)
        assert len(found.spans) == len(lengths)
        errors += _errors(found, doc.spans)
    assert np.median(errors) <= 20


def test_a_key_whose_text_is_absent_finds_nothing():
    for seed in range(5):
        doc = plant(KEY, 2000, [300, 150], seed=200 + seed)
        found = localize_ids(doc.ids, OTHER)
        assert not _flagged(found) and found.spans == []


def test_span_p_values_are_adjusted_and_ordered():
    doc = plant(KEY, 3000, [400, 80], seed=7)
    found = localize_ids(doc.ids, KEY)
    assert found.spans
    for s in found.spans:
        assert isinstance(s, Span) and s.end > s.start and s.num_scored_tokens <= s.end - s.start
        assert s.log10_p >= s.window_log10_p  # the scan's price is never negative
        assert s.p_value == pytest.approx(10.0**s.log10_p)
    # the document p-value: min(p_global / w, p_scan / (1 - w)), weighted Bonferroni
    assert found.log10_p == pytest.approx(
        min(
            0.0,
            found.global_log10_p - math.log10(GAMMA_SHARE),
            found.scan_log10_p - math.log10(1 - GAMMA_SHARE),
        )
    )
    # every span's p-value carries the scan's share of the level
    scan_floor = found.scan_log10_p - math.log10(1 - GAMMA_SHARE) - 1e-12
    assert all(s.log10_p >= scan_floor for s in found.spans)


def _null(n: int, rng: np.random.Generator) -> Detection:
    scores = rng.standard_exponential(n)
    p, lp = gamma_sf(float(scores.sum()), n)
    return Detection(float(scores.sum()), p, lp, n, n, scores, np.ones(n, np.bool_))


def test_the_document_decision_keeps_its_level_on_simulated_null_documents():
    """4,000 null documents of 1,000-3,000 scored tokens (seeds apart from the calibration's).

    At 1% a correct procedure flags about 40 or fewer (the Bonferroni pair gives 20-40); one
    at 2% would flag about 80: the bound of 55 separates them by more than 2.5 sd each way.
    """
    rng = np.random.default_rng(1234)
    config = KeyConfig(key=1)
    flagged = spans = scan_hits = 0
    for _ in range(4000):
        loc = localize_detection(_null(int(rng.integers(1000, 3001)), rng), config)
        flagged += _flagged(loc)
        spans += bool(loc.spans)
        scan_hits += loc.scan_log10_p <= -2
    assert flagged <= 55
    assert spans <= flagged
    assert 20 <= scan_hits <= 62  # the table is calibrated, not merely conservative


@pytest.mark.slow
def test_the_document_decision_keeps_its_level_on_human_prose():
    """Real prose, de-duplicated, under 16 random keys: 2,000-token documents, ~1,900 tests."""
    ids = human_ids()
    docs = [ids[i : i + 2000] for i in range(0, ids.shape[0] - 2000, 2000)]
    keys = np.random.default_rng(77).integers(0, 2**63, size=16)
    flagged = spans = 0
    for k in keys:
        for doc in docs:
            loc = localize_ids(doc, int(k))
            flagged += _flagged(loc)
            spans += bool(loc.spans)
    tests = len(keys) * len(docs)
    assert tests >= 1800
    assert flagged <= 0.01 * tests + 3 * math.sqrt(0.01 * tests)
    assert spans <= flagged


def test_too_few_scored_tokens_give_no_spans():
    loc = localize_ids(np.arange(20), KEY)
    assert loc.spans == [] and not _flagged(loc) and loc.scan_log10_p == 0.0


def test_dual_key_scores_map_to_exponentials_under_the_null():
    from scipy import stats

    from detector.evidence.localize import exp_scores

    rng = np.random.default_rng(3)
    for alpha in (0.1, 0.5, 0.9):
        a, b = rng.standard_exponential((2, 20000))
        s = (1 - alpha) * a + alpha * b
        det = Detection(0.0, 1.0, 0.0, s.size, s.size, s, np.ones(s.size, np.bool_))
        e = exp_scores(det, KeyConfig(key=1, algorithm="dual_key_gumbel", alpha=alpha))
        assert stats.kstest(e, "expon").pvalue > 1e-3


def test_localizing_from_a_batched_first_window_changes_nothing():
    config = KeyConfig(key=KEY)
    human = human_ids()
    docs = [human[a : a + n] for a, n in [(0, 40), (500, 150), (9000, 1200), (20000, 2500)]]
    docs += [plant(KEY, 1500, [200], seed=7).ids, plant(KEY, 2500, [150, 300], seed=8).ids]
    detections = [detect_config(ids, config) for ids in docs]
    windows = first_windows(detections, [config] * len(docs))
    found = 0
    for d, w in zip(detections, windows, strict=True):
        batched = localize_detection(d, config, first_window=w)
        single = localize_detection(d, config)
        assert batched.summary() == single.summary() and batched.spans == single.spans
        found += len(single.spans)
    assert found >= 3
