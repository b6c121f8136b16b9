"""The one decision (``detector.decision.decide``): what it decides, the batched variant equal
to one-by-one, and the library and the CLI answering alike on the one-voice corpus."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from detector.cli.main import main
from detector.core.config import KeyConfig
from detector.decision.decide import decide, decide_many, gamma_line_log10
from detector.decision.family import correct
from detector.decision.rule import READING_SHARE, with_weighted
from detector.decision.text import detect_text
from detector.evidence.detection import Document, detect_config
from detector.evidence.localize import GAMMA_SHARE as SHARE
from detector.text.tokenizers import load_tokenizer
from tests.detector.decision.one_voice import KEY, corpus, mixed_range

THRESHOLD = 0.01


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("default")


@pytest.fixture(scope="module")
def texts():
    return corpus(KEY)


def test_the_mixed_text_is_flagged_by_its_span_though_the_global_test_alone_misses_it(tok, texts):
    found = detect_text(texts["mixed"], tok, [KEY])
    plain = found.hypotheses[0].detection
    assert plain.log10_p > math.log10(THRESHOLD)  # the global Gamma test alone: no
    assert found.verdict == "watermarked" and found.log10_p <= math.log10(THRESHOLD)
    assert found.decided_by == "gamma" and len(found.spans) >= 1
    start, end = mixed_range(KEY)  # where the watermarked words lie
    (span,) = found.spans
    assert span.start_char < end and span.end_char > start  # the span covers them
    assert span.end_char - span.start_char < 4 * (end - start)
    # document p = min(p_global / w, p_scan / (1 - w)): the scan decided here
    loc = found.localizations[0]
    assert found.log10_p == pytest.approx(min(0.0, loc.scan_log10_p - math.log10(1 - SHARE)))


def _docs(tok, text, configs_per_doc):
    ids = tok.encode(text)
    return [Document(ids, configs, ngrams=tok.ngram_table) for configs in configs_per_doc]


def test_decide_many_gives_what_decide_gives_one_text_at_a_time(tok, texts):
    """Two documents (two key families), every corpus text: batched scoring and first scan
    windows change nothing."""
    groups = [
        [KeyConfig(key=KEY, name="a"), KeyConfig(key=KEY + 1, name="b")],
        [KeyConfig(key=KEY + 2, context_width=3, name="c")],
    ]
    batch = [_docs(tok, t, groups) for t in texts.values()]
    many = decide_many(batch, threshold=THRESHOLD)
    for docs, got in zip(batch, many, strict=True):
        alone = decide(docs, threshold=THRESHOLD)
        assert got.summary() == alone.summary()
        assert got.documents == (0, 0, 1) and got.num_hypotheses == 3
    flagged = {name for name, d in zip(texts, many, strict=True) if d.verdict == "watermarked"}
    assert flagged == {"mixed", "marked", "brief"}


def test_the_family_is_holm_corrected_and_names_the_test_that_decided(tok, texts):
    docs = _docs(tok, texts["marked"], [[KeyConfig(key=KEY + 9), KeyConfig(key=KEY)]])
    got = decide(docs, threshold=THRESHOLD)
    own = [h.decision_log10_p for h in got.hypotheses]
    np.testing.assert_allclose([h.adjusted_log10_p for h in got.hypotheses], correct(own))
    assert got.best == 1 and got.log10_p == pytest.approx(min(0.0, own[1] + math.log10(2)))
    assert [loc.log10_p for loc in got.localizations] == own


def test_a_models_reading_adds_the_weighted_test_to_the_decision(tok, texts):
    """With E[s] per token (a model's reading, here synthetic) each hypothesis decides with
    2 min(p_localized, p_weighted) and says which side gave it."""
    ids = tok.encode(texts["marked"])
    rng = np.random.default_rng(3)
    for expected in (np.full(ids.shape[0], 2.5), rng.uniform(1.0, 1.2, ids.shape[0])):
        doc = Document(ids, [KeyConfig(key=KEY)], expected, ngrams=tok.ngram_table)
        got = decide([doc], threshold=THRESHOLD)
        (h,) = got.hypotheses
        weighted, loc = h.detection.weighted, got.localizations[0]
        assert weighted is not None
        assert h.decision_log10_p == pytest.approx(with_weighted(loc.log10_p, weighted.log10_p))
        assert h.decided_by == ("weighted" if weighted.log10_p < loc.log10_p else "gamma")
        assert got.decided_by == h.decided_by and got.log10_p == h.adjusted_log10_p


def test_the_gamma_field_is_the_plain_test_and_vllms_statistic_bit_for_bit(tok, texts):
    for text in texts.values():
        ids = tok.encode(text)
        config = KeyConfig(key=KEY)
        gamma = detect_text(text, tok, [config]).summary()["gamma"]
        plain = detect_config(ids, config, THRESHOLD, ngrams=tok.ngram_table)
        vllm = detect_config(ids, config, THRESHOLD)  # every de-duplicated token
        assert (gamma["score"], gamma["log10_p"], gamma["p_value"]) == (
            plain.score,
            plain.log10_p,
            plain.p_value,
        )
        assert (gamma["vllm_score"], gamma["vllm_p_value"]) == (vllm.score, vllm.p_value)


def test_the_cli_prints_the_librarys_decision_on_every_text(tok, texts, tmp_path, capsys):
    (tmp_path / "key").write_text(str(KEY))
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        assert main(["detect", "--key-file", str(tmp_path / "key"), str(tmp_path / name)]) == 0
        out = json.loads(capsys.readouterr().out)
        ref = detect_text(text, tok, [KEY]).summary()
        for field in ("verdict", "verdict_reason", "is_watermarked", "p_value", "log10_p"):
            assert out[field] == ref[field], (name, field)
        assert out["decided_by"] == ref["decided_by"] and out["gamma"] == ref["gamma"]
        assert [(s["start_char"], s["end_char"], s["log10_p"]) for s in out["spans"]] == [
            (s["start_char"], s["end_char"], s["log10_p"]) for s in ref["spans"]
        ]
        assert str(KEY) not in json.dumps(out)


def test_the_gamma_line_is_where_the_global_test_alone_makes_the_decision(tok, texts):
    """The chart's line: a global Gamma p at or under it makes the decision, whatever the
    scan found, and the document p-value it gives is the first Holm step exactly."""
    for m in (1, 3):
        line = gamma_line_log10(THRESHOLD, m)
        assert line == pytest.approx(math.log10(SHARE * THRESHOLD / m))
        # the document p-value p_global / w at the line is Holm's first step exactly
        assert line - math.log10(SHARE) == pytest.approx(math.log10(THRESHOLD / m))
        assert gamma_line_log10(THRESHOLD, m, weighted=True) == pytest.approx(
            line + math.log10(1 - READING_SHARE)
        )
    flagged_by_gamma = 0
    for text in texts.values():
        found = detect_text(text, tok, [KEY])
        plain = found.hypotheses[0].detection
        if plain.num_scored_tokens and plain.log10_p <= gamma_line_log10(THRESHOLD, 1):
            flagged_by_gamma += 1
            assert found.verdict == "watermarked"
        # the document p-value is at most p_global / w: the line is the rule's own
        assert found.hypotheses[0].decision_log10_p <= min(
            0.0, plain.log10_p - math.log10(SHARE) + 1e-12
        )
    assert flagged_by_gamma >= 1
