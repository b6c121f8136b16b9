"""The adaptive decision: a model-free stage, then a reading only where it left the text
undecided, under one family-wise level (``detector.decision.rule.READING_SHARE``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from detector.core.config import KeyConfig
from detector.decision.decide import decide_many
from detector.decision.rule import READING_SHARE, with_weighted
from detector.decision.text import TextGroup, decide_texts
from detector.reading.model import ModelReading
from detector.text.tokenizers import load_tokenizer
from tests.detector.decision.one_voice import KEY, corpus


class FakeReader:
    """A reading computed from the text alone (never the key), as any reading must be; it
    records what it was asked to read."""

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    def read(self, ids_list):
        out = []
        for ids in ids_list:
            ids = np.asarray(ids, np.int64)
            self.asked.append(ids.tolist())
            expected = 1.0 + (ids % 7) / 3.0
            observed = 1.0 + (ids % 5) / 2.0
            out.append(ModelReading(expected=expected, observed=observed))
        return out


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("default")


@pytest.fixture(scope="module")
def texts():
    return corpus(KEY)


def _prose_chunks(tok, n, size):
    from benchmarks.corpus import english_prose

    ids = tok.encode(english_prose())
    return [tok.decode(list(ids[i * size : (i + 1) * size])) for i in range(n)]


def test_the_split_of_the_level_is_one_constant_and_half_gives_twice_the_minimum():
    assert 0.0 < READING_SHARE < 1.0
    # no reading possible: the model-free p itself; set aside: p / (1 - s)
    assert with_weighted(-3.0, None) == -3.0
    assert with_weighted(-3.0, None, reserved=True) == pytest.approx(
        -3.0 - math.log10(1.0 - READING_SHARE)
    )
    both = with_weighted(-3.0, -5.0)
    assert both == pytest.approx(
        min(-3.0 - math.log10(1 - READING_SHARE), -5.0 - math.log10(READING_SHARE))
    )
    if READING_SHARE == 0.5:
        assert both == pytest.approx(math.log10(2) - 5.0)


def test_a_text_the_model_free_stage_decides_is_never_read(tok, texts):
    """The watermarked text is flagged and the long human text cleared without the model;
    only the undecided one is read, and its verdict then comes from the reading stage."""
    reader = FakeReader()
    group = TextGroup(tok, [KeyConfig(key=KEY)], reader=lambda: reader)
    long_human = " ".join(_prose_chunks(tok, 1, 1500))
    batch = [texts["marked"], long_human, texts["short"]]
    got = decide_texts(batch, [group], threshold=0.01, reading="read")
    assert [o.decision.verdict for o in got[:2]] == ["watermarked", "not_watermarked"]
    assert [o.reading for o in got] == ["none", "none", "done"]
    assert reader.asked == [got[2].token_ids[0].tolist()]  # the undecided text alone
    assert got[2].decision.read and got[2].decision.hypotheses[0].detection.weighted is not None
    # deferred: the same model-free answers, the undecided one pending, nothing read
    later = FakeReader()
    deferred = decide_texts(
        batch, [TextGroup(tok, [KeyConfig(key=KEY)], reader=lambda: later)], reading="defer"
    )
    assert [o.reading for o in deferred] == ["none", "none", "pending"]
    assert later.asked == []
    assert [o.decision.summary() for o in deferred[:2]] == [o.decision.summary() for o in got[:2]]


def test_a_reading_the_caller_does_not_allow_leaves_the_model_free_verdict(tok, texts):
    reader = FakeReader()
    group = TextGroup(tok, [KeyConfig(key=KEY)], reader=lambda: reader)
    seen = []

    def allow(t, tokens):
        seen.append((t, tokens))
        return False

    (out,) = decide_texts([texts["short"]], [group], reading="read", allow_read=allow)
    assert out.reading == "skipped" and reader.asked == []
    assert seen == [(0, len(out.token_ids[0]))]
    (pending,) = decide_texts([texts["short"]], [group], reading="defer")
    assert out.decision.summary() | {"reading": "x"} == pending.decision.summary() | {
        "reading": "x"
    }
    # a reader that cannot be loaded: the same
    broken = TextGroup(tok, [KeyConfig(key=KEY)], reader=lambda: None)
    (none,) = decide_texts([texts["short"]], [broken], reading="read")
    assert none.reading == "skipped" and none.decision.verdict == "inconclusive"


def test_without_a_reader_the_model_free_decision_keeps_the_full_level(tok, texts):
    for reading in ("never", "defer", "read"):
        (out,) = decide_texts(
            [texts["mixed"]], [TextGroup(tok, [KeyConfig(key=KEY)])], reading=reading
        )
        loc = out.decision.localizations[0]
        assert out.reading == "none" and out.decision.log10_p == pytest.approx(loc.log10_p)


def test_the_reading_stage_only_lowers_p_values_so_stage_one_flags_stay_flagged(tok):
    """Per hypothesis, the reading stage's decision p-value is at most the model-free stage's
    (the reading's share was set aside in both): whatever stage one flags, stage two flags."""
    rng = np.random.default_rng(11)
    chunks = _prose_chunks(tok, 30, 120)
    configs = [KeyConfig(key=int(k)) for k in rng.integers(0, 2**63, 3)]
    reader = FakeReader()
    ids = [tok.encode(c) for c in chunks]
    from detector.evidence.detection import Document

    def docs(reading):
        return [
            [
                Document(
                    i,
                    configs,
                    None if r is None else r.expected,
                    ngrams=tok.ngram_table,
                    observed_scores=None if r is None else r.observed,
                )
            ]
            for i, r in zip(ids, reading, strict=True)
        ]

    one = decide_many(docs([None] * len(ids)), threshold=0.3, reserve=[[True]] * len(ids))
    two = decide_many(docs(reader.read(ids)), threshold=0.3, reserve=[[True]] * len(ids))
    for a, b in zip(one, two, strict=True):
        for ha, hb in zip(a.hypotheses, b.hypotheses, strict=True):
            assert hb.decision_log10_p <= ha.decision_log10_p + 1e-12
            assert hb.adjusted_log10_p <= ha.adjusted_log10_p + 1e-12
        assert b.is_watermarked or not a.is_watermarked


@pytest.mark.parametrize("threshold", [0.2])
def test_the_family_wise_error_holds_across_both_stages_on_simulated_nulls(tok, threshold):
    """Human chunks under random keys (nulls: a key that did not write the text), two keys a
    text, through the adaptive path with a reading of the text alone: the rate at which any
    key is flagged stays within the threshold (its binomial spread), while stage one at the
    full level with the reading on top flags at least as often."""
    rng = np.random.default_rng(5)
    chunks = _prose_chunks(tok, 40, 80)
    trials, flagged, naive = 0, 0, 0
    reader = FakeReader()
    for _ in range(10):
        keys = [KeyConfig(key=int(k)) for k in rng.integers(0, 2**63, 2)]
        group = TextGroup(tok, keys, reader=lambda: reader)
        got = decide_texts(chunks, [group], threshold=threshold, reading="read")
        trials += len(got)
        flagged += sum(o.decision.is_watermarked for o in got)
        # the invalid two-stage rule: model-free at the full level, the reading at its share
        full = decide_texts(chunks, [TextGroup(tok, keys)], threshold=threshold)
        for o, f in zip(got, full, strict=True):
            weighted = [h.detection.weighted for h in o.decision.hypotheses]
            by_reading = any(
                w is not None and w.log10_p <= math.log10(threshold * READING_SHARE / 2)
                for w in weighted
            )
            naive += f.decision.is_watermarked or by_reading
    rate = flagged / trials
    spread = math.sqrt(threshold * (1 - threshold) / trials)
    assert rate <= threshold + 2.5 * spread, (rate, trials)
    assert naive >= flagged
