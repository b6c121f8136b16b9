"""Power of the model-assisted weighted test against the Gamma sum test, with the FPR of each
and of the default decision measured in the same run.

The watermark is simulated exactly from SmolLM2-135M's own distributions: the model answers
code and creative prompts (sampled at the cell's temperature and top-p: the keyed draw samples
the same distribution, so the text has the entropy profile of a watermarked answer), reads
its answer back and gives, at each position, the distribution ``q`` after temperature and
top-p. The keyed Gumbel-max draw picks token x
with probability ``q_x``, and the chosen token's uniform is ``R^(q_x)`` with ``R`` ~ U(0, 1)
independent of x (``max_x u_x^(1/q_x)`` is uniform), so its score is
``s = -log(1 - R^(q_x))``. This gives watermarked scores with the entropy profile of real
text, without generating it; every position is scored (no repeated contexts in the
simulation). Null scores are i.i.d. Exp(1) on the same weights. Per cell: power and FPR at
alpha 1% of the Gamma test, the weighted test, and the default decision
``2 min(p_gamma, p_weighted)``.

Run: ``.venv/bin/python benchmarks/bench_assist.py [--chunks 12] [--trials 200]``
(generation, forward passes of 12 x 200 tokens per cell, then about 30 ms per tail).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from detector.core.sampling import top_k_top_p_mask  # noqa: E402
from detector.core.stats import gamma_sf  # noqa: E402
from detector.evidence.weighted import weighted_sf  # noqa: E402
from detector.reading.model import ModelAssist, expected_score_of  # noqa: E402

ALPHA = 0.01
PREFIXES = (50, 100, 200)


def distributions(
    assist: ModelAssist, ids: np.ndarray, temperature: float, top_p: float
) -> tuple[Any, np.ndarray]:
    """``(q [n, vocab] float64 torch, w [n])`` at every position after the first: the model's
    distribution after temperature and top-p, and the weight ``E[s] - 1`` under it."""
    import torch

    with torch.inference_mode():
        seq = torch.tensor([[*assist.prefix, *ids.tolist()]])
        logits = assist.model(seq).logits[0, len(assist.prefix) : -1].double()  # [n-1, vocab]
        logits = logits / temperature
        if top_p < 1.0:
            logits = top_k_top_p_mask(logits, None, top_p)
        q = logits.softmax(-1)
        return q, expected_score_of(q).numpy()


def watermarked_scores(q: Any, trials: int, rng: np.random.Generator) -> np.ndarray:
    """``[trials, n]`` scores of tokens drawn by the keyed Gumbel-max from ``q`` (random keys)."""
    import torch

    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    picks = torch.multinomial(q, trials, replacement=True, generator=gen)  # [n, trials]
    q_chosen = q.gather(1, picks).numpy().T  # [trials, n]
    r = rng.random(q_chosen.shape)
    return -np.log1p(-(r**q_chosen))


def decisions(scores: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """Per trial, log10 p of the Gamma test, the weighted test and the default decision."""
    n = scores.shape[1]
    gamma = np.array([gamma_sf(float(s.sum()), n)[1] for s in scores])
    weighted = np.array([weighted_sf(w, float(w @ s))[1] for s in scores])
    default = np.minimum(0.0, np.minimum(gamma, weighted) + math.log10(2.0))
    return {"gamma": gamma, "weighted": weighted, "default": default}


def generated_answers(
    assist: ModelAssist, prompts: list[str], size: int, temperature: float, top_p: float
) -> list[np.ndarray]:
    """The model's answers to ``prompts`` (chat template), ``size`` tokens each (EOS held
    off), sampled at ``temperature`` / ``top_p`` with a fixed seed; one batched generate."""
    import torch
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(assist.path), local_files_only=True)
    tok.padding_side = "left"
    chats = [
        tok.apply_chat_template(
            [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
        )
        for p in prompts
    ]
    batch = tok(chats, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(1201)
    with torch.inference_mode():
        out = assist.model.generate(
            **batch,
            do_sample=True,
            temperature=temperature,
            top_p=top_p,
            top_k=0,
            max_new_tokens=size,
            min_new_tokens=size,
            pad_token_id=tok.pad_token_id or tok.eos_token_id,
        )
    return [row[batch["input_ids"].shape[1] :].numpy().astype(np.int64) for row in out]


def human_chunks(genre: str, count: int, size: int) -> list[np.ndarray]:
    """``count`` chunks of ``size`` SmolLM2 tokens of a human genre (``benchmarks.dispersion``)."""
    from benchmarks.dispersion import chunks, genre_documents
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    docs = genre_documents()[genre][::7][: count * 4]  # spread over the corpus
    ids = [tok.encode_lazy(d)[0] for d in docs]
    return chunks(ids, size, count)


def run(
    assist: ModelAssist, genre: str, temperature: float, top_p: float, chunks: int, trials: int
) -> dict[int, dict[str, tuple[float, float]]]:
    """``out[prefix][statistic] = (power, fpr)`` at alpha 1% over ``chunks x trials`` tests."""
    from benchmarks.bench_generate import coding_prompts, creative_prompts

    rng = np.random.default_rng(20261201)
    flags: dict[int, dict[str, list[np.ndarray]]] = {p: {} for p in PREFIXES}
    prompts = (coding_prompts if genre == "code" else creative_prompts)(chunks)
    for ids in generated_answers(assist, prompts, max(PREFIXES) + 1, temperature, top_p):
        q, w = distributions(assist, ids, temperature, top_p)
        marked = watermarked_scores(q, trials, rng)
        null = rng.exponential(1.0, marked.shape)
        for p in PREFIXES:
            for kind, scores in (("power", marked), ("fpr", null)):
                for stat, lp in decisions(scores[:, :p], w[:p]).items():
                    flags[p].setdefault(f"{stat}/{kind}", []).append(lp <= math.log10(ALPHA))
    return {
        p: {
            stat: (
                float(np.concatenate(f[f"{stat}/power"]).mean()),
                float(np.concatenate(f[f"{stat}/fpr"]).mean()),
            )
            for stat in ("gamma", "weighted", "default")
        }
        for p, f in flags.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=12, help="answers per cell")
    parser.add_argument("--trials", type=int, default=200, help="keyed draws per chunk")
    parser.add_argument(
        "--cells",
        default="code:1:1,code:0.7:0.9,creative:1:1,creative:0.7:0.9",
        help="genre:temperature:top_p, comma-separated",
    )
    args = parser.parse_args()
    from generator.models import embedded_model_dir

    assist = ModelAssist(embedded_model_dir())
    print(f"alpha {ALPHA}; {args.chunks} chunks x {args.trials} draws per cell")
    print("genre  T/top-p   tokens | power: gamma weighted default (ratio)", end=" ")
    print("| FPR: gamma weighted default")
    for cell in args.cells.split(","):
        genre, temp, top = cell.split(":")
        temperature, top_p = float(temp), float(top)
        start = time.perf_counter()
        cells = run(assist, genre, temperature, top_p, args.chunks, args.trials)
        for p, c in cells.items():
            g, wt, d = c["gamma"], c["weighted"], c["default"]
            ratio = d[0] / g[0] if g[0] else float("inf")
            print(
                f"{genre:6s} {temperature}/{top_p}   {p:4d} | "
                f"{g[0]:.3f}  {wt[0]:.3f}  {d[0]:.3f} ({ratio:.2f}x) | "
                f"{g[1]:.4f}  {wt[1]:.4f}  {d[1]:.4f}"
            )
        print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
