"""The oracle columns: tests told which scored tokens are intact (not deployable; they bound
what a statistic that cannot recover the edited contexts can reach)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.robustness.common import KEY, RUN, THRESHOLD, weighted_log_sf
from benchmarks.robustness.edits import intact_mask
from detector.core.config import as_key_config


@dataclass(frozen=True)
class SourceReads:
    """What the oracle knows of each token of an unedited source text (``read_sources``)."""

    expected: np.ndarray  # E[s] as the product reads it (T=1, BOS, no prompt)
    expected_sampling: np.ndarray  # E[s] of the distribution sampled from (prompt, T, top-p)
    q: np.ndarray  # that distribution's probability of the token that was drawn
    # f(q_x) of each token as the product reads it (T=1, BOS, no prompt): the observed-token
    # weights of the library's model-assisted decision; None where not read.
    observed: np.ndarray | None = None


LR_FLOOR = 1e-8  # the oracle likelihood ratio's smallest p-value (a lower tail as 1 - upper)
Q_FLOOR = 1e-4  # a drawn token's probability read below this (numerics of top-p) is raised


def read_sources(
    assist: Any, prompts: list[str], texts: list[np.ndarray], temperature: float, top_p: float
) -> list[SourceReads]:
    """The model's reading of every unedited text: as the product reads it, and after its
    chat prompt at the sampling temperature and top-p (the distribution the generator drew
    from, up to vLLM's numerics)."""
    import torch
    from transformers import AutoTokenizer

    from detector.core.sampling import top_k_top_p_mask
    from detector.reading.model import expected_score_of

    tok = AutoTokenizer.from_pretrained(str(assist.path), local_files_only=True)
    product = assist.read(texts)
    out = []
    for prompt, ids, reading in zip(prompts, texts, product, strict=True):
        expected = reading.expected
        head = list(
            tok.apply_chat_template(
                [{"role": "user", "content": prompt}],
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
            )
        )
        seq = torch.tensor([head + [int(i) for i in ids]])
        with torch.inference_mode():
            logits = assist.model(input_ids=seq).logits[0, len(head) - 1 : -1]
            logits = logits.to(torch.float64) / temperature
            if top_p < 1.0:
                logits = top_k_top_p_mask(logits, None, top_p)
            probs = logits.softmax(dim=-1)
            sampled = 1.0 + expected_score_of(probs).numpy()
            q = probs[torch.arange(len(ids)), torch.as_tensor(ids)].numpy()
        out.append(SourceReads(expected, sampled, np.maximum(q, Q_FLOOR), reading.observed))
    return out


def oracle_log10_ps(
    ids: np.ndarray, origin: np.ndarray, reads: SourceReads, key: int = KEY
) -> tuple[float, float, float, float, float]:
    """log10 p of the oracle tests on the scored tokens that ``intact_mask`` keeps (not
    deployable: they know the edits): the Gamma test; the weighted test (``E[s] - 1``
    weights, exact tail) with the product's reading of the unedited text and with the
    sampling distribution's; the Neyman-Pearson test of the Gumbel-max likelihood ratio
    ``f1/f0(s) = (1/q) u^(1/q - 1)`` (``u = 1 - e^-s``) at the drawn token's sampling
    probability ``q``: reject for small ``T = sum (1/q - 1)(-log u)``, whose null is a
    weighted sum of i.i.d. Exp(1), p-value ``P0[T <= t] = 1 - P0[T > t]``. The intact mask
    and the reads depend on the text only, never on the key: every test keeps its size. Last,
    the weighted test on the library's observed-token weights ``min(f(q_x) - 1, 2)`` of the
    product's reading (0.0 when ``reads.observed`` is None)."""
    from detector.core.stats import gamma_upper_log10
    from detector.evidence.detection import detect_config
    from detector.evidence.localize import exp_scores
    from detector.evidence.weighted import clean_weights, observed_weights

    config = as_key_config(key)
    if config.algorithm != "gumbel":
        raise ValueError("the oracle's likelihood ratio is that of the plain Gumbel-max score")
    det = detect_config(ids, config, THRESHOLD)
    scored = det.scored_mask
    keep = intact_mask(origin, config.context_width)[scored]
    s = exp_scores(det, config)[keep]
    src = np.asarray(origin)[scored][keep]
    gamma = gamma_upper_log10(float(s.size), float(s.sum()))

    def weighted(expected: np.ndarray, w: np.ndarray | None = None) -> float:
        w = np.maximum(expected[src] - 1.0, 0.0) if w is None else w
        return min(0.0, weighted_log_sf(w, float((w * s).sum())) / math.log(10.0))

    c = 1.0 / reads.q[src] - 1.0
    lr = 0.0
    if clean_weights(c).size:
        t = float((c * -np.log(-np.expm1(-np.maximum(s, 1e-300)))).sum())
        # 1 - P0[T > t] is resolved to about 1e-9 (the inversion's accuracy): floored at
        # LR_FLOOR, which only makes the p-value larger.
        lr = min(0.0, math.log10(max(-math.expm1(weighted_log_sf(c, t)), LR_FLOOR)))
    observed = 0.0
    if reads.observed is not None:
        observed = weighted(reads.expected, observed_weights(reads.observed[src]))
    return gamma, weighted(reads.expected), weighted(reads.expected_sampling), lr, observed


def oracle_rates(
    docs: list[np.ndarray], origins: list[np.ndarray], reads: list[SourceReads]
) -> tuple[float, ...]:
    level = math.log10(THRESHOLD)
    got = [
        [v <= level for v in oracle_log10_ps(d, o, r)]
        for d, o, r in zip(docs, origins, reads, strict=True)
    ]
    return tuple(float(v) for v in np.array(got, bool).reshape(-1, len(RUN.oracle)).mean(0))
