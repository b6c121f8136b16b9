"""Derive ``detector.evidence.power.DEFAULT_TOKENS_NEEDED``: scored tokens for 80% power on code.

The three-way verdict says ``not_watermarked`` only when a watermarked text of this length and
kind would have been detected with power >= 0.8. When neither a model nor the key's measured
power curve says what "this kind" is, the detector assumes the low-entropy case: code from
SmolLM2-135M-Instruct at T = 0.7 / top-p 0.9. This script measures it with the real sampler:

1. Watermarked answers to the 50 coding prompts of ``bench_generate``: ``--cached FILE`` reads
   generations cached by ``bench_power`` (vLLM, the project's processor, answers ending at EOS;
   ``{"token_ids": [...]}`` under the benchmark key), else they are generated here with the
   transformers backend (``ignore_eos``) and cached in ``$PROVENANCE_DATA_DIR/verdict_default/``.
2. For k scored tokens on a grid, the share detected at p <= 0.01 on the prefix holding the
   first k scored tokens (texts with fewer scored tokens are left out of that k), beside the
   false-positive share of the same prefixes under another key (the null on the same texts).
3. The default: a per-token mean score ``e`` fitted by maximum likelihood to the detected /
   missed outcomes at every grid point (``power.constant_power``), the scored tokens it needs
   for 80% (``power.tokens_for_power``), and a bootstrap over texts for its 95% upper bound,
   which is what ``DEFAULT_TOKENS_NEEDED`` ships (rounded up to 25).
4. With ``--model``, the model's view of the same texts: one forward pass gives each
   position's distribution at T = 0.7 / top-p 0.9, hence the sampled token's score moments
   (``power.score_moments``); the mean predicted power (``power.power`` with variances) beside
   the realized share checks the model-assisted basis on real text.

Run: ``python benchmarks/bench_verdict_default.py --cached FILE`` or
``python benchmarks/bench_verdict_default.py [--prompts 50] [--tokens 448] [--model]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from benchmarks.bench_generate import KEY, _backend, _key_file, _requests, coding_prompts  # noqa: E402
from detector.evidence import power  # noqa: E402
from detector.evidence.detection import detect_ids  # noqa: E402
from detector.paths import data_dir  # noqa: E402

OTHER_KEY = KEY ^ 0x0123_4567_89AB_CDEF
GRID = (25, 50, 75, 100, 125, 150, 175, 200, 225, 250, 300, 350, 400)
THRESHOLD = 0.01
TEMPERATURE, TOP_P = 0.7, 0.9


def generate(prompts: int, tokens: int) -> dict[str, Any]:
    path = data_dir() / "verdict_default" / f"code_t07_p{prompts}_n{tokens}.json"
    if path.exists():
        return json.loads(path.read_text())
    backend = _backend("transformers", _key_file())
    requests = _requests(coding_prompts(prompts), tokens, True, TEMPERATURE, TOP_P)
    t = time.perf_counter()
    out = []
    for i in range(0, len(requests), 10):
        out += backend.generate(requests[i : i + 10])
    data = {
        "prompt_ids": [backend.encode_prompt(r) for r in requests],
        "output_ids": [list(map(int, g.token_ids)) for g in out],
        "seconds": time.perf_counter() - t,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return data


def moments(prompt_ids: list[list[int]], output_ids: list[list[int]]) -> list[Any]:
    """Per output token, the sampled token's score moments under T = 0.7 / top-p 0.9."""
    import torch

    from generator.models import load_hf_model

    model, _, _ = load_hf_model(None)
    out = []
    for prompt, ids in zip(prompt_ids, output_ids, strict=True):
        with torch.no_grad():
            logits = model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
        probs = torch.softmax(logits.double() / TEMPERATURE, dim=-1)
        sorted_p, order = probs.sort(dim=-1, descending=True)
        keep = (sorted_p.cumsum(-1) - sorted_p) < TOP_P  # the smallest set reaching top-p
        kept = torch.where(keep, sorted_p, 0.0)[:, :256]  # top-p at T = 0.7 keeps fewer
        kept = kept / kept.sum(-1, keepdim=True)
        out.append(power.score_moments(kept.numpy()))
    return out


def prefix_for(mask: np.ndarray, k: int) -> int | None:
    """Tokens of the shortest prefix holding ``k`` scored tokens (None: too few)."""
    where = np.flatnonzero(mask)
    return int(where[k - 1]) + 1 if where.size >= k else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=448)
    parser.add_argument("--model", action="store_true", help="add the model's predictions")
    parser.add_argument("--cached", help="token ids cached by bench_power (JSON)")
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    if args.cached:
        data = json.loads(Path(args.cached).read_text())
        data["output_ids"] = data.pop("token_ids")
        args.tokens = max(len(ids) for ids in data["output_ids"])
    else:
        data = generate(args.prompts, args.tokens)
    outputs = [np.asarray(ids, np.int64) for ids in data["output_ids"]]
    masks = [detect_ids(ids, KEY).scored_mask for ids in outputs]
    stats = moments(data["prompt_ids"], data["output_ids"]) if args.model else None
    outcomes: list[tuple[int, int, bool]] = []  # (text, scored tokens, detected)
    print(
        f"code, SmolLM2-135M-Instruct, T={TEMPERATURE} top-p {TOP_P}, {len(outputs)} texts of "
        f"{args.tokens} tokens (generated in {data['seconds']:.0f} s)"
    )
    print("| scored tokens | texts | detected | FPR (other key) | predicted (model) |")
    for k in GRID:
        hits, nulls, predicted = [], [], []
        for i, (ids, mask) in enumerate(zip(outputs, masks, strict=True)):
            end = prefix_for(mask, k)
            if end is None:
                continue
            hits.append(detect_ids(ids[:end], KEY).p_value <= THRESHOLD)
            outcomes.append((i, k, hits[-1]))
            nulls.append(detect_ids(ids[:end], OTHER_KEY).p_value <= THRESHOLD)
            if stats is not None:
                sel = mask[:end]
                m = stats[i]
                predicted.append(
                    power.power(
                        m.mean[:end][sel], math.log10(THRESHOLD), variances=m.variance[:end][sel]
                    )
                )
        if not hits:
            break
        pred = f"{100 * np.mean(predicted):.1f}%" if predicted else "-"
        print(
            f"| {k} | {len(hits)} | {100 * np.mean(hits):.1f}% | "
            f"{100 * np.mean(nulls):.1f}% | {pred} |",
            flush=True,
        )
    fit = fit_needed(outcomes)
    rng = np.random.default_rng(0)
    texts = sorted({i for i, _, _ in outcomes})
    boot = []
    for _ in range(args.bootstrap):
        pick = rng.choice(texts, len(texts))
        boot.append(fit_needed([o for j in pick for o in outcomes if o[0] == j]))
    upper = float(np.percentile(boot, 95))
    print(
        f"fitted: 80% power at {fit} scored tokens; bootstrap 95% upper bound {upper:.0f} "
        f"({args.bootstrap} resamples of {len(texts)} texts)"
    )
    print(f"shipped DEFAULT_TOKENS_NEEDED = {power.DEFAULT_TOKENS_NEEDED}")


def fit_needed(outcomes: list[tuple[int, int, bool]]) -> int:
    """Scored tokens for 80% power under the per-token mean score that maximizes the
    likelihood of the detected / missed outcomes."""
    from scipy import optimize

    level = math.log10(THRESHOLD)

    def nll(e: float) -> float:
        out = 0.0
        for _, k, hit in outcomes:
            p = min(max(power.constant_power(k, e, level), 1e-9), 1 - 1e-9)
            out -= math.log(p if hit else 1.0 - p)
        return out

    e = optimize.minimize_scalar(nll, bounds=(1.0001, 3.0), method="bounded").x
    return power.tokens_for_power(float(e), level) or 1 << 20


if __name__ == "__main__":
    main()
