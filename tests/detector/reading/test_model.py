"""Model-assisted detection: expected scores from the embedded SmolLM2, the weighted test."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from detector.core.config import KeyConfig
from detector.core.sampling import top_k_top_p_mask
from detector.decision.family import decision_log10_p, family_verdict, flagged
from detector.decision.text import detect_text
from detector.evidence.detection import detect_ids
from detector.evidence.weighted import (
    OBSERVED_WEIGHT_CAP,
    SUSPECT_PROBABILITY,
    SUSPECT_SCORE,
    observed_weights,
    suspected_edits,
    weighted_test,
)
from detector.reading.model import (
    TOP_K,
    ModelAssist,
    ModelDirError,
    _excess_rows,
    check_model_dir,
    expected_score_of,
    load_assist,
    observed_score_of,
)
from detector.text.tokenizers import load_tokenizer
from generator.models import embedded_model_dir

PROSE = (
    "The old lighthouse keeper climbed the spiral stairs every evening, counting the steps "
    "as his father had taught him. Ninety-one steps, a pause at the window, and then the "
    "lamp, which he polished with a cloth that smelled of salt and paraffin."
)


@pytest.fixture(scope="module")
def assist() -> ModelAssist:
    return load_assist(str(embedded_model_dir()))


@pytest.fixture(scope="module")
def ids() -> np.ndarray:
    return load_tokenizer().encode_lazy(PROSE)[0]


def test_expected_score_of_a_uniform_choice_is_the_harmonic_number() -> None:
    for k in (1, 2, 10, 1000):
        probs = torch.zeros(1, 2000, dtype=torch.float64)
        probs[0, :k] = 1.0 / k
        harmonic = sum(1.0 / i for i in range(1, k + 1))
        assert float(expected_score_of(probs)[0]) == pytest.approx(harmonic - 1.0, rel=1e-9)


def test_a_certain_token_has_weight_zero() -> None:
    probs = torch.zeros(1, 50, dtype=torch.float64)
    probs[0, 7] = 1.0
    assert float(expected_score_of(probs)[0]) == 0.0


def test_expected_scores_equal_one_forward_pass_of_the_whole_text(
    assist: ModelAssist, ids: np.ndarray
) -> None:
    (got,) = assist.expected_scores([ids])
    with torch.inference_mode():
        logits = assist.model(torch.tensor([[*assist.prefix, *ids.tolist()]])).logits[0, :-1]
    want = 1.0 + expected_score_of(logits.double().softmax(-1)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got.shape == ids.shape and got.min() >= 1.0


def _observed_reference(logits: torch.Tensor, targets: torch.Tensor, top_p: float) -> np.ndarray:
    """f(q_x) from the full sort: q after top-p, or at the temperature where top-p drops x."""
    from scipy import special

    q_top = top_k_top_p_mask(logits, None, top_p).softmax(-1).gather(1, targets[:, None])[:, 0]
    q_t = logits.softmax(-1).gather(1, targets[:, None])[:, 0]
    q = torch.where(q_top > 0, q_top, q_t).numpy()
    return special.digamma(1.0 + 1.0 / q) + 0.5772156649015329


def test_read_gives_each_token_its_observed_score_and_the_same_expected_scores(
    assist: ModelAssist, ids: np.ndarray
) -> None:
    (reading,) = assist.read([ids], temperature=0.7, top_p=0.9)
    with torch.inference_mode():
        logits = assist.model(torch.tensor([[*assist.prefix, *ids.tolist()]])).logits[0, :-1]
    logits = logits.double() / 0.7
    want_e = 1.0 + expected_score_of(top_k_top_p_mask(logits, None, 0.9).softmax(-1)).numpy()
    np.testing.assert_allclose(reading.expected, want_e, rtol=1e-5, atol=1e-6)
    want_o = _observed_reference(logits, torch.from_numpy(ids), 0.9)
    np.testing.assert_allclose(reading.observed, want_o, rtol=1e-5, atol=1e-6)
    assert reading.observed.min() >= 1.0
    (plain,) = assist.expected_scores([ids], temperature=0.7, top_p=0.9)
    np.testing.assert_array_equal(plain, reading.expected)


@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0])
def test_the_top_k_nucleus_equals_the_full_sort(scale: float) -> None:
    """Flat rows (nucleus longer than TOP_K: the full sort), peaked rows (the top TOP_K)."""
    gen = torch.Generator().manual_seed(3)
    logits = scale * torch.randn(6, 5 * TOP_K, generator=gen, dtype=torch.float64)
    targets = torch.randint(0, 5 * TOP_K, (6,), generator=gen)
    targets[0] = int(logits[0].argmax())  # one row whose token is the most likely
    excess, q = _excess_rows(logits, targets, 0.9)
    want = expected_score_of(top_k_top_p_mask(logits, None, 0.9).softmax(-1))
    np.testing.assert_allclose(excess.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    from scipy import special

    observed = special.digamma(1.0 + 1.0 / q.numpy()) + 0.5772156649015329
    np.testing.assert_allclose(observed, _observed_reference(logits, targets, 0.9), rtol=1e-12)


def test_windows_cover_long_texts_and_batches_do_not_change_results(ids: np.ndarray) -> None:
    small = ModelAssist(embedded_model_dir(), window=24, context=8, batch_tokens=48)
    whole, head = small.expected_scores([ids, ids[:20]])
    assert whole.shape == ids.shape and whole.min() >= 1.0
    # The first window reads the text from its start, so it matches the short document.
    np.testing.assert_allclose(whole[:20], head, rtol=1e-5, atol=1e-6)
    (alone,) = small.expected_scores([ids])
    np.testing.assert_allclose(whole, alone, rtol=1e-5, atol=1e-6)


def test_lower_temperature_and_top_p_lower_the_expected_scores(
    assist: ModelAssist, ids: np.ndarray
) -> None:
    (t1,) = assist.expected_scores([ids[:40]])
    (cold,) = assist.expected_scores([ids[:40]], temperature=0.7, top_p=0.9)
    assert cold.sum() < t1.sum()
    assert np.all(cold <= t1 + 1e-6)


def test_bad_ids_and_settings_are_refused(assist: ModelAssist) -> None:
    with pytest.raises(ValueError, match="token ids"):
        assist.expected_scores([[1, 2, assist.vocab_size]])
    with pytest.raises(ValueError, match="temperature"):
        assist.expected_scores([[1, 2]], temperature=0.0)
    with pytest.raises(ValueError, match="top_p"):
        assist.expected_scores([[1, 2]], top_p=1.5)


def test_detect_ids_decides_with_both_tests(assist: ModelAssist, ids: np.ndarray) -> None:
    (expected,) = assist.expected_scores([ids])
    plain = detect_ids(ids, 42)
    both = detect_ids(ids, 42, expected_scores=expected)
    assert plain.weighted is None and family_verdict([plain]).hypotheses[0].decided_by == "gamma"
    assert both.score == plain.score and both.log10_p == plain.log10_p  # Gamma unchanged
    assert both.weighted is not None
    lowest = min(both.log10_p, both.weighted.log10_p)
    assert decision_log10_p(both) == pytest.approx(min(0.0, lowest + math.log10(2)))
    (h,) = family_verdict([both]).hypotheses
    assert h.decided_by == ("weighted" if both.weighted.log10_p < both.log10_p else "gamma")
    np.testing.assert_array_equal(both.expected_scores, expected[both.scored_mask])
    assert "weighted" in both.summary() and "weighted" not in plain.summary()
    assert "decided_by" not in both.summary()  # evidence carries no decision


def test_detect_text_with_a_model_reports_the_weighted_test(assist: ModelAssist) -> None:
    found = detect_text(PROSE, load_tokenizer(), [1, 2], assist=assist)
    for h in found.hypotheses:
        assert h.detection.weighted is not None
        assert h.adjusted_log10_p >= h.decision_log10_p
        # the decision with a model: 2 min(p_localized, p_weighted)
        loc = found.localizations[h.index]
        assert h.decision_log10_p == pytest.approx(
            min(0.0, np.log10(2) + min(loc.log10_p, h.detection.weighted.log10_p))
        )
        stronger = h.detection.weighted.log10_p < loc.log10_p
        assert h.decided_by == ("weighted" if stronger else "gamma")


def test_the_weighted_statistic_is_the_weighted_sum_of_scores() -> None:
    scores = np.array([1.0, 0.0, 2.0, 0.5])
    mask = np.array([True, False, True, True])
    expected = np.array([2.0, 9.0, 1.0, 3.0])
    got = weighted_test(scores, mask, expected, KeyConfig(key=1))
    assert got.score == pytest.approx(1.0 * 1.0 + 0.0 * 2.0 + 2.0 * 0.5)
    assert got.expected_excess == pytest.approx(3.0)
    np.testing.assert_array_equal(got.expected_scores, [2.0, 1.0, 3.0])
    dual = weighted_test(scores, mask, expected, KeyConfig(key=1, algorithm="dual_key_gumbel"))
    assert dual.p_value != got.p_value  # a sum of 2n terms: a different null
    assert got.weighting == "expected"


def test_observed_scores_give_capped_observed_token_weights() -> None:
    scores = np.array([1.0, 0.0, 2.0, 0.5])
    mask = np.array([True, False, True, True])
    expected = np.array([2.0, 9.0, 1.0, 3.0])
    observed = np.array([1.5, 8.0, 2.0 + OBSERVED_WEIGHT_CAP, 1.0])  # the third is capped
    got = weighted_test(scores, mask, expected, KeyConfig(key=1), observed)
    assert got.weighting == "observed"
    assert got.score == pytest.approx(0.5 * 1.0 + OBSERVED_WEIGHT_CAP * 2.0 + 0.0 * 0.5)
    assert got.expected_excess == pytest.approx(0.5 + OBSERVED_WEIGHT_CAP)
    np.testing.assert_array_equal(got.expected_scores, [2.0, 1.0, 3.0])  # still E[s]
    with pytest.raises(ValueError, match="one value per token"):
        weighted_test(scores, mask, expected, KeyConfig(key=1), observed[:3])
    found = detect_ids([5, 6, 7, 8, 9, 10], 3, expected_scores=np.full(6, 2.0))
    assert found.weighted is not None and found.weighted.weighting == "expected"
    found = detect_ids(
        [5, 6, 7, 8, 9, 10], 3, expected_scores=np.full(6, 2.0), observed_scores=np.full(6, 3.0)
    )
    assert found.weighted is not None and found.weighted.weighting == "observed"


def test_suspected_edits_and_the_tokens_after_them_weigh_nothing() -> None:
    assert SUSPECT_SCORE == pytest.approx(
        float(observed_score_of(torch.tensor(SUSPECT_PROBABILITY, dtype=torch.float64)))
    )
    observed = np.full(12, 2.5)
    observed[3] = SUSPECT_SCORE + 0.1  # read below SUSPECT_PROBABILITY: a suspected edit
    observed[10] = SUSPECT_SCORE - 0.1  # just above it: kept (capped)
    hit = suspected_edits(observed, 4)
    np.testing.assert_array_equal(np.flatnonzero(hit), [3, 4, 5, 6, 7])
    np.testing.assert_array_equal(np.flatnonzero(suspected_edits(observed, 0)), [3])
    w = observed_weights(observed, 4)
    np.testing.assert_array_equal(w[hit], 0.0)
    np.testing.assert_allclose(w[~hit], np.minimum(observed[~hit] - 1.0, OBSERVED_WEIGHT_CAP))
    np.testing.assert_array_equal(observed_weights(observed)[3], OBSERVED_WEIGHT_CAP)
    tail = np.full(3, 2.5)
    tail[-1] = SUSPECT_SCORE + 1.0  # the last token: nothing after it to drop
    np.testing.assert_array_equal(suspected_edits(tail, 4), [False, False, True])
    # The weighted test takes the whole text's readings: a suspect that is not scored
    # (position 1) still drops the scored tokens whose contexts hold it.
    scores = np.ones(8)
    mask = np.array([True, False] + [True] * 6)
    got = weighted_test(
        scores, mask, np.full(8, 2.0), KeyConfig(key=1), np.r_[2.0, SUSPECT_SCORE + 1, [2.0] * 6]
    )
    assert got.expected_excess == pytest.approx(3 * 1.0)  # positions 0, 6 and 7 weigh 1
    assert got.num_suspected == 4 and got.summary()["num_suspected"] == 4  # 2, 3, 4, 5
    assert got.score == pytest.approx(3 * 1.0)


def test_dropping_suspected_edits_recovers_edited_watermarked_text() -> None:
    """Keyed-argmax text with 35% of its tokens replaced by human ones, the replacements read
    as suspected edits (as a model reads most substituted tokens): the weighted test, which
    then scores only the tokens no edit touched, detects far more often than the Gamma test
    on every token; the same texts under other keys stay at the threshold's rate, since the
    dropped tokens depend on the text only."""
    from tests.detector.planted import human_ids, watermark_ids

    key, pool = 0x5EED_0F_5A4A, human_ids()
    rng = np.random.default_rng(3)
    weighted = gamma = decided = false_flags = tests = 0
    for seed in range(40):
        ids = watermark_ids(key, 120, seed)
        hit = rng.random(ids.shape[0]) < 0.35
        edited = np.where(hit, pool[rng.integers(0, pool.shape[0], ids.shape[0])], ids)
        observed = np.where(hit, SUSPECT_SCORE + 1.0, 3.0)  # weight 2 where not suspected
        found = detect_ids(edited, key, expected_scores=observed, observed_scores=observed)
        assert found.weighted is not None
        weighted += found.weighted.log10_p <= -2.0
        gamma += found.log10_p <= -2.0
        decided += flagged(found)
        for other in range(1, 6):
            null = detect_ids(
                edited, key + other, expected_scores=observed, observed_scores=observed
            )
            false_flags += flagged(null)
            tests += 1
    assert weighted >= 28 and weighted >= gamma + 12  # measured 34 against 14
    assert decided >= 28
    assert false_flags <= tests * 0.01 + 3 * math.sqrt(tests * 0.01 * 0.99)


def test_a_directory_without_config_or_weights_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelDirError, match="not a directory"):
        check_model_dir(tmp_path / "missing")
    with pytest.raises(ModelDirError, match="config.json"):
        check_model_dir(tmp_path)
    shutil.copy(embedded_model_dir() / "config.json", tmp_path / "config.json")
    with pytest.raises(ModelDirError, match="no weights"):
        check_model_dir(tmp_path)


def test_a_model_with_a_smaller_vocabulary_is_refused(tmp_path: Path) -> None:
    config = json.loads((embedded_model_dir() / "config.json").read_text())
    config["vocab_size"] = 1000
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelDirError, match="smaller than the tokenizer"):
        check_model_dir(tmp_path, vocab_size=49152)
    assert check_model_dir(embedded_model_dir(), vocab_size=49152) == embedded_model_dir().resolve()


@pytest.fixture(scope="module")
def human_chunks() -> list[np.ndarray]:
    """20 chunks of 40 tokens of human text: standard-library code and docstring prose."""
    from benchmarks.bench_assist import human_chunks as chunks

    return chunks("code", 10, 40) + chunks("prose", 10, 40)


@pytest.fixture(scope="module")
def human_readings(assist: ModelAssist, human_chunks: list[np.ndarray]) -> list:
    """The model's reading of those chunks at T=0.7/top-p 0.9, read once for both weightings."""
    return assist.read(human_chunks, temperature=0.7, top_p=0.9)


@pytest.mark.parametrize("weighting", ["expected", "observed"])
def test_the_weighted_test_keeps_its_size_on_human_text(
    human_readings: list, human_chunks: list[np.ndarray], weighting: str
) -> None:
    """500 tests (20 human chunks x 25 random keys), read at T=0.7/top-p 0.9, with the
    ``E[s] - 1`` weights and with the default observed-token weights: the weighted p-values
    pass a Kolmogorov-Smirnov test against U(0, 1), and neither the weighted test nor the
    decision flags more than alpha + 3 sd at 1% and 10%."""
    from scipy import stats

    readings = human_readings
    keys = np.random.default_rng(5).integers(0, 2**63, 25)
    found = [
        detect_ids(
            ids,
            int(k),
            expected_scores=r.expected,
            observed_scores=r.observed if weighting == "observed" else None,
        )
        for ids, r in zip(human_chunks, readings, strict=True)
        for k in keys
    ]
    assert all(d.weighted is not None and d.weighted.weighting == weighting for d in found)
    weighted = np.array([d.weighted.p_value for d in found if d.weighted is not None])
    decision = 10.0 ** np.array([decision_log10_p(d) for d in found])
    assert weighted.size == 500
    assert stats.kstest(weighted, "uniform").pvalue > 1e-3
    for alpha in (0.01, 0.1):
        bound = alpha + 3 * math.sqrt(alpha * (1 - alpha) / weighted.size)
        assert (weighted <= alpha).mean() <= bound
        assert (decision <= alpha).mean() <= bound


# SmolLM2-135M-Instruct's answer to coding_prompts(1)[0] at T=0.7/top-p 0.9, 160 tokens
# (benchmarks.bench_assist.generated_answers; kept here: generating costs minutes on a CPU).
LOW_ENTROPY_ANSWER = (
    "```python\nclass Node:\n    def __init__(self, data):\n        self.data = data\n"
    "        self.next = None\n\nclass LinkedList:\n    def __init__(self):\n"
    "        self.head = None\n\n    def add_node(self, data):\n        new_node = Node(data)\n"
    "        if not self.head:\n            self.head = new_node\n        else:\n"
    "            current_node = Node(data)\n"
    "            current_node.next = current_node.prev = new_node\n"
    "            current_node.prev = current_node.next = new_node\n\n"
    "    def reverse_list(self):\n        new_node = None\n        current_node = self.head\n"
    "        while current_node:\n            new_node = current_node"
)


def test_the_default_decision_beats_the_gamma_test_on_low_entropy_text(
    assist: ModelAssist,
) -> None:
    """Keyed draws from SmolLM2's own distributions along its own answer to a coding prompt
    at T=0.7/top-p 0.9 (simulated exactly, ``benchmarks/bench_assist.py``), 120 tokens:
    the decision with ``E[s] - 1`` weights detects clearly more than the Gamma test alone
    (measured 0.83 vs 0.37 on 60 draws), and on null scores with the same weights flags at
    most alpha + 3 sd."""
    from benchmarks.bench_assist import decisions, distributions, watermarked_scores

    rng = np.random.default_rng(11)
    ids = load_tokenizer().encode_lazy(LOW_ENTROPY_ANSWER)[0][:121]
    q, w = distributions(assist, ids, 0.7, 0.9)
    marked = decisions(watermarked_scores(q, 200, rng), w)
    null = decisions(rng.exponential(1.0, (300, w.size)), w)
    power = {stat: float((lp <= -2.0).mean()) for stat, lp in marked.items()}
    assert power["default"] >= power["gamma"] + 0.2
    false = null["default"] <= -2.0
    assert false.mean() <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / false.size)


def test_the_chat_prefix_reads_the_text_as_an_answer(ids: np.ndarray) -> None:
    chat = ModelAssist(embedded_model_dir(), prefix="chat")
    assert len(chat.prefix) > 1 and chat.prefix[-1] != chat.prefix[0]
    (got,) = chat.expected_scores([ids[:30]])
    assert got.shape == (30,) and got.min() >= 1.0
    with pytest.raises(ValueError, match="prefix"):
        ModelAssist(embedded_model_dir(), prefix="nothing")
