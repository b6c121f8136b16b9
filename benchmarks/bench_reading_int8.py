"""The model's reading (``detector.reading.model.ModelAssist``) in int8 against float32 on the CPU:
CPU seconds per 300-token check and how far the expected and observed scores move.

int8 is torch's dynamic quantization (``torch.ao.quantization.quantize_dynamic``) of every
``Linear`` of the transformer body; the output head stays float32 (its logits are taken to
float64 for the scores, and it is the embedding matrix, tied). Texts: the cached code answers
of ``bench_power`` (T = 0.7 / top-p 0.9), cut to their first 300 tokens, read at the sampling's
temperature and top-p, one text per call as a pasted check reads it; CPU time is the process's
(``time.process_time``), the best of ``--repeats``.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_reading_int8.py [--texts 10]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.generations import cache_dir  # noqa: E402


def cpu_per_check(assist, texts, repeats: int) -> float:
    best = []
    for ids in texts:
        runs = []
        for _ in range(repeats):
            t0 = time.process_time()
            assist.read([ids], temperature=0.7, top_p=0.9)
            runs.append(time.process_time() - t0)
        best.append(min(runs))
    return float(np.median(best))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    import torch

    from detector.decision.family import decision_log10_p, flagged
    from detector.evidence.detection import detect_ids
    from detector.reading.model import ModelAssist
    from generator.models import embedded_model_dir

    data = json.loads((cache_dir("power") / "code_T0.7_top-p_0.9.json").read_text())
    texts = [np.asarray(x[:300], np.int64) for x in data["token_ids"]][: args.texts]
    fp32 = ModelAssist(embedded_model_dir())
    int8 = ModelAssist(embedded_model_dir())
    int8.model.model = torch.ao.quantization.quantize_dynamic(
        int8.model.model, {torch.nn.Linear}, dtype=torch.qint8
    )
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')}, {len(texts)} texts of 300 tokens, torch "
        f"{torch.__version__}, threads {torch.get_num_threads()}",
        flush=True,
    )
    a = fp32.read(texts, temperature=0.7, top_p=0.9)
    b = int8.read(texts, temperature=0.7, top_p=0.9)
    de = np.concatenate([x.expected - y.expected for x, y in zip(a, b, strict=True)])
    do = np.concatenate([x.observed - y.observed for x, y in zip(a, b, strict=True)])
    agree, lp_diff = 0, []
    for ids, x, y in zip(texts, a, b, strict=True):
        d1 = detect_ids(ids, KEY, expected_scores=x.expected, observed_scores=x.observed)
        d2 = detect_ids(ids, KEY, expected_scores=y.expected, observed_scores=y.observed)
        agree += flagged(d1) == flagged(d2)
        lp_diff.append(abs(decision_log10_p(d1) - decision_log10_p(d2)))
    print(
        f"E[s]: max |diff| {np.abs(de).max():.4f}, mean {np.abs(de).mean():.5f}; observed "
        f"f(q_x): max |diff| {np.abs(do).max():.4f}, mean {np.abs(do).mean():.5f}"
    )
    print(
        f"decisions equal on {agree}/{len(texts)}; |decision log10 p| diff: max "
        f"{max(lp_diff):.3f}, median {np.median(lp_diff):.3f}"
    )
    t32 = cpu_per_check(fp32, texts, args.repeats)
    t8 = cpu_per_check(int8, texts, args.repeats)
    print(
        f"CPU per 300-token check (median over texts, best of {args.repeats}): "
        f"float32 {t32:.3f} s, int8 {t8:.3f} s (target <= 0.3 s)"
    )


if __name__ == "__main__":
    main()
