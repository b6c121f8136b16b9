"""The robustness benchmark's edit record and oracle columns on planted text (the spec's
keyed argmax over a toy model), no vLLM and no model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from benchmarks.robustness.edits import edit, edit_tracked, intact_mask
from benchmarks.robustness.masked import masked_log10_ps, suspected_intact
from benchmarks.robustness.oracle import SourceReads, oracle_log10_ps
from detector.core.contexts import PAD
from detector.evidence.detection import detect_ids
from detector.evidence.weighted import weighted_sf
from tests.detector.toy import keyed_sample, toy_logits

KEY = 0x5EED_0F_BE_4C_11_AB_01
WIDTH = 4
EULER_GAMMA = 0.5772156649015329


def _intact_by_hand(edited: np.ndarray, origin: np.ndarray, source: np.ndarray) -> np.ndarray:
    """A token is intact when it comes from the source and each of its ``WIDTH`` context
    slots holds the source token at the same offset, or padding where the source has it."""
    out = np.zeros(edited.shape[0], bool)
    for j, o in enumerate(origin):
        if o < 0:
            continue
        ok = True
        for i in range(1, WIDTH + 1):
            if j - i < 0:
                ok &= o - i < 0
            else:
                ok &= origin[j - i] >= 0 and origin[j - i] == o - i
        out[j] = ok
        if ok:  # then the draw's inputs (context and token) are the source's
            padded_edit = [PAD] * WIDTH + edited.tolist()
            padded_src = [PAD] * WIDTH + source.tolist()
            assert padded_edit[j : j + WIDTH + 1] == padded_src[o : o + WIDTH + 1]
    return out


@pytest.mark.parametrize("kind", ["substitute", "insert", "delete"])
def test_the_edit_record_and_the_intact_mask_agree_with_a_direct_reading(kind):
    rng = np.random.default_rng(3)
    pool = np.arange(1000, 2000)
    for _ in range(20):
        source = rng.integers(0, 900, 60)
        edited, origin = edit_tracked(source, kind, 0.2, pool, rng)
        kept = origin >= 0
        assert np.array_equal(edited[kept], source[origin[kept]])
        assert np.all(np.diff(origin[kept]) > 0)
        assert np.array_equal(intact_mask(origin, WIDTH), _intact_by_hand(edited, origin, source))


def test_edit_keeps_its_draws():
    """``edit`` is ``edit_tracked`` without the record: the same generator gives the same text
    (earlier figures stay reproducible)."""
    source = np.arange(200)
    pool = np.arange(1000, 2000)
    for kind in ("substitute", "insert", "delete"):
        a = edit(source, kind, 0.3, pool, np.random.default_rng(5))
        b, _ = edit_tracked(source, kind, 0.3, pool, np.random.default_rng(5))
        assert np.array_equal(a, b)


def test_the_intact_mask_by_hand():
    # Substitution at 5: positions 5..9 lose their draw, 10 is intact again.
    origin = np.arange(16)
    origin[5] = -1
    assert intact_mask(origin, 4).tolist() == [True] * 5 + [False] * 5 + [True] * 6
    # A token inserted first shifts everything: the first tokens' padded contexts change.
    origin = np.concatenate([[-1], np.arange(10)])
    assert intact_mask(origin, 4).tolist() == [False] * 5 + [True] * 6
    # Deleting token 0: token 1 now starts the text, its context is padding, not token 0.
    assert intact_mask(np.arange(1, 9), 4).tolist() == [False] * 4 + [True] * 4


def _toy_text(seed: int, length: int = 200, temperature: float = 1.0):
    """A keyed-argmax text over a toy model and the reads of its tokens (q, E[s])."""
    rng = np.random.default_rng([seed, 9])
    vocab = rng.choice(49152, 2000, replace=False)
    logits = toy_logits(rng, 2000, length, temperature=temperature)
    ids = keyed_sample(KEY, logits, seed=seed, vocab_ids=vocab)
    probs = special.softmax(logits, axis=1)
    column = {int(v): j for j, v in enumerate(vocab)}
    q = probs[np.arange(length), [column[int(t)] for t in ids]]
    with np.errstate(divide="ignore"):
        f = special.digamma(1.0 + 1.0 / probs) + EULER_GAMMA
    expected = (probs * f).sum(1)
    observed = special.digamma(1.0 + 1.0 / q) + EULER_GAMMA  # f(q_x) of the drawn tokens
    return ids, SourceReads(expected, expected, q, observed)


def test_on_unedited_text_the_oracle_gamma_is_the_global_test():
    ids, reads = _toy_text(1)
    gamma, *_ = oracle_log10_ps(ids, np.arange(ids.shape[0]), reads, KEY)
    assert gamma == pytest.approx(detect_ids(ids, KEY).log10_p, rel=1e-9)
    assert gamma < -5


def test_the_oracle_finds_the_signal_that_edits_hide():
    """30% substitutions: the global test loses most texts, the oracle (intact tokens only)
    keeps them, and the likelihood ratio at the true q is at least as strong as Gamma."""
    pool = np.arange(30000, 40000)
    rng = np.random.default_rng(17)
    level = math.log10(0.01)
    glob, gamma, weighted, lr, observed = [], [], [], [], []
    for seed in range(12):
        ids, reads = _toy_text(seed, temperature=0.2)  # peaked: little signal per token
        edited, origin = edit_tracked(ids, "substitute", 0.3, pool, rng)
        g, w, ws, r, ob = oracle_log10_ps(edited, origin, reads, KEY)
        observed.append(ob)
        glob.append(detect_ids(edited, KEY).log10_p)
        gamma.append(g)
        weighted.append(w)
        lr.append(r)
        assert w == ws  # the same reads
    assert np.median(gamma) < np.median(glob) - 1.0
    assert np.mean(np.asarray(gamma) <= level) > np.mean(np.asarray(glob) <= level)
    assert np.mean(np.asarray(weighted) <= level) >= np.mean(np.asarray(gamma) <= level)
    assert np.mean(np.asarray(lr) <= level) >= np.mean(np.asarray(weighted) <= level)
    assert np.median(lr) <= np.median(gamma)
    assert np.median(observed) < np.median(glob) - 1.0  # observed-token weights, intact only


def test_the_oracle_keeps_its_size_under_another_key():
    """Texts watermarked under KEY, tested under other keys: every oracle column rejects at
    about the threshold's rate (the mask and reads do not depend on the key)."""
    pool = np.arange(30000, 40000)
    rng = np.random.default_rng(23)
    texts = [_toy_text(seed, length=80) for seed in range(8)]
    p = []
    for k in range(25):
        for ids, reads in texts:
            edited, origin = edit_tracked(ids, "substitute", 0.2, pool, rng)
            p.append(oracle_log10_ps(edited, origin, reads, KEY + 1 + k))
    p10 = 10.0 ** np.asarray(p)  # [200, 5]
    rate = (p10 <= 0.1).mean(0)
    sd = math.sqrt(0.1 * 0.9 / p10.shape[0])
    assert np.all(rate <= 0.1 + 3 * sd), rate
    assert np.all(p10.mean(0) > 0.4), p10.mean(0)


def test_the_lower_tail_of_the_likelihood_ratio_matches_simulation():
    """``1 - P0[T > t]`` against 200,000 null draws of ``T = sum c_i E_i``."""
    rng = np.random.default_rng(4)
    c = 1.0 / rng.uniform(0.05, 1.0, 90) - 1.0
    null = (rng.standard_exponential((200_000, c.size)) * c).sum(1)
    for t in np.quantile(null, [0.002, 0.01, 0.05, 0.3]):
        exact = 1.0 - weighted_sf(c, float(t))[0]
        sim = float((null <= t).mean())
        assert exact == pytest.approx(sim, rel=4 * math.sqrt((1 - sim) / (sim * null.shape[0])))


def test_suspected_edits_mask_their_contexts():
    q = np.full(12, 0.5)
    q[3] = 1e-6
    assert suspected_intact(q, 1e-4, 4).tolist() == [True] * 3 + [False] * 5 + [True] * 4
    assert suspected_intact(q, 1e-7, 4).all()


def test_where_the_suspects_are_the_edits_the_masked_test_is_the_oracle():
    """Substituted tokens read at a tiny probability, the others at their true one: the
    masked Gamma test at a threshold between them keeps exactly the intact tokens."""
    pool = np.arange(30000, 40000)
    rng = np.random.default_rng(29)
    for seed in range(4):
        ids, reads = _toy_text(seed, temperature=0.2)
        edited, origin = edit_tracked(ids, "substitute", 0.2, pool, rng)
        q = np.where(origin >= 0, np.maximum(reads.q[np.maximum(origin, 0)], 1e-3), 1e-7)
        e = np.where(origin >= 0, reads.expected[np.maximum(origin, 0)], 1.0)
        gamma, weighted = masked_log10_ps(edited, q, e, KEY, taus=(1e-5, 1.0))
        oracle = oracle_log10_ps(edited, origin, reads, KEY)
        assert gamma[0] == pytest.approx(oracle[0], rel=1e-9)
        assert weighted[0] == pytest.approx(oracle[1], rel=1e-6)
        assert gamma[1] == 0.0  # every token suspected: nothing left to test


def test_the_masked_tests_keep_their_size_under_another_key():
    pool = np.arange(30000, 40000)
    rng = np.random.default_rng(31)
    texts = [_toy_text(seed, length=80) for seed in range(8)]
    p = []
    for k in range(25):
        for ids, reads in texts:
            edited, origin = edit_tracked(ids, "substitute", 0.2, pool, rng)
            q = np.where(origin >= 0, reads.q[np.maximum(origin, 0)], 1e-7)
            gamma, weighted = masked_log10_ps(
                edited, q, reads.expected[np.maximum(origin, 0)], KEY + 1 + k, taus=(1e-4,)
            )
            p.append([gamma[0], weighted[0]])
    p10 = 10.0 ** np.asarray(p)
    rate = (p10 <= 0.1).mean(0)
    assert np.all(rate <= 0.1 + 3 * math.sqrt(0.09 / p10.shape[0])), rate
    assert np.all(p10.mean(0) > 0.4), p10.mean(0)


def test_the_observed_read_is_the_products_read():
    """``read_observed``'s E[s] are ``ModelAssist``'s at temperature 1 and at the sampling;
    its q is the probability of the token that is there (a likely and an unlikely token)."""
    from benchmarks.robustness.masked import read_observed
    from detector.reading.model import load_assist
    from detector.text.tokenizers import load_tokenizer
    from generator.models import embedded_model_dir

    assist = load_assist(str(embedded_model_dir()))
    ids = load_tokenizer("default").encode("The cat sat on the mat. The cat sat on the mat.")
    odd = ids.copy()
    odd[-2] = load_tokenizer("default").encode(" quasar")[0]
    (q, e, e_s), (q_odd, _, _) = read_observed(assist, [ids, odd], 0.7, 0.9)
    np.testing.assert_allclose(e, assist.expected_scores([ids])[0], rtol=1e-6)
    np.testing.assert_allclose(
        e_s, assist.expected_scores([ids], temperature=0.7, top_p=0.9)[0], rtol=1e-6
    )
    assert q[-2] > 0.1  # the repeated sentence's " mat" is likely
    assert q_odd[-2] < 1e-3 < q[-2]
    np.testing.assert_array_equal(q[:-2], q_odd[:-2])


def test_the_assisted_columns_decide_as_the_product_does():
    from benchmarks.robustness.columns import decisions
    from detector.core.config import as_key_config
    from detector.decision.family import decision_log10_p
    from detector.evidence.detection import detect_config
    from detector.evidence.localize import localize_ids
    from detector.evidence.weighted import observed_weights, weighted_sf
    from detector.reading.model import ModelReading

    ids, reads = _toy_text(5)
    observed = special.digamma(1.0 + 1.0 / reads.q) + EULER_GAMMA
    reading = ModelReading(expected=np.asarray(reads.expected), observed=observed)
    got = decisions(ids, KEY, reading)
    assert len(got) == 10
    product = detect_config(
        ids,
        as_key_config(KEY),
        0.01,
        expected_scores=reading.expected,
        observed_scores=reading.observed,
    )
    assert product.weighted is not None and product.weighted.weighting == "observed"
    assert got[4] == (product.weighted.log10_p <= -2)  # the weighted column
    assert got[5] == (decision_log10_p(product) <= -2)  # the assisted decision
    assert got[5]  # a toy text at T=1 is detected
    w = observed_weights(observed)[product.scored_mask]  # every token weighted: the rule before
    unmasked = weighted_sf(w, float((w * product.token_scores[product.scored_mask]).sum()))[1]
    assert got[6] == (min(product.log10_p, unmasked) + math.log10(2.0) <= -2)
    # The web product's verdict with a model: the localized decision and the weighted test.
    loc = localize_ids(ids, KEY, threshold=0.01)
    assert got[9] == (min(loc.log10_p, product.weighted.log10_p) + math.log10(2.0) <= -2)
