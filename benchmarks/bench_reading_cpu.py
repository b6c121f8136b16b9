"""The model's reading on one CPU thread, side by side in one run: torch float32 (the reference,
``detector.reading.model.ModelAssist``), torch int8, ONNX Runtime float32 and int8
(``detector.reading.ort.OrtAssist``): CPU seconds per 300-token check and how far each moves
the scores and the decision from the reference.

torch int8 is ``torch.ao.quantization.quantize_dynamic`` of every ``Linear`` of the body (the
head, tied to the embedding, stays float32); ONNX Runtime int8 is ``quantize_dynamic`` of the
body's MatMuls, int8 weights per output channel (``detector.reading.ort``). Texts: the cached
code answers of ``bench_power`` (T = 0.7 / top-p 0.9, watermarked under its key), cut to their
first 300 tokens, and 300-token chunks of held-out human prose, code and templated text
(``benchmarks.dispersion``). Each is read one text per call, as a pasted check reads it, at
temperature 1 / top-p 1 (what the product's checks read at) and at the answers' T = 0.7 /
top-p 0.9. CPU time is the process's (``time.process_time``), the best of ``--repeats`` per
text, the median over texts. Figures compared per token: ``E[s]`` and the observed score
``f(q_x)``; per text: the decision's own log10 p-value (``decision_log10_p``) with the
reading and whether it flags, under the benchmark key.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_reading_cpu.py [--texts 8]``
(the first run exports and quantizes the ONNX graphs under the data directory, about two
minutes; ``bench_power.py --generate-only --cells "code T=0.7 top-p 0.9"`` makes the texts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY  # noqa: E402
from benchmarks.generations import cache_dir  # noqa: E402

LENGTH = 300
BOUND = 0.3  # CPU seconds per 300-token check under which the reading may run on pasted checks
SAMPLINGS = ((1.0, 1.0), (0.7, 0.9))


def cpu_per_check(assist: Any, texts: list[np.ndarray], repeats: int, t: float, p: float) -> float:
    best = []
    for ids in texts:
        runs = []
        for _ in range(repeats):
            t0 = time.process_time()
            assist.read([ids], temperature=t, top_p=p)
            runs.append(time.process_time() - t0)
        best.append(min(runs))
    return float(np.median(best))


def texts_of(count: int) -> dict[str, list[np.ndarray]]:
    """``count`` watermarked code answers and ``count`` human chunks, ``LENGTH`` tokens each."""
    from benchmarks.bench_power import human_chunks

    path = cache_dir("power") / "code_T0.7_top-p_0.9.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run bench_power.py --generate-only first")
    data = json.loads(path.read_text())
    marked = [np.asarray(x[:LENGTH], np.int64) for x in data["token_ids"]][:count]
    human = [c for chunks in human_chunks(count, LENGTH).values() for c in chunks]
    rng = np.random.default_rng(3)
    picked = rng.choice(len(human), min(count, len(human)), replace=False)
    return {"watermarked": marked, "human": [human[i] for i in sorted(picked)]}


def backends(names: list[str]) -> dict[str, Any]:
    import torch

    from detector.reading.model import ModelAssist
    from detector.reading.ort import OrtAssist
    from generator.models import embedded_model_dir

    out: dict[str, Any] = {}
    for name in names:
        if name == "torch float32":
            out[name] = ModelAssist(embedded_model_dir())
        elif name == "torch int8":
            assist = ModelAssist(embedded_model_dir())
            assist.model.model = torch.ao.quantization.quantize_dynamic(
                assist.model.model, {torch.nn.Linear}, dtype=torch.qint8
            )
            out[name] = assist
        else:
            out[name] = OrtAssist(embedded_model_dir(), variant=name.split()[-1])
    return out


def compare(ref: list[Any], got: list[Any], texts: list[np.ndarray]) -> dict[str, float]:
    from detector.decision.family import decision_log10_p, flagged
    from detector.evidence.detection import detect_ids

    de = np.concatenate([x.expected - y.expected for x, y in zip(ref, got, strict=True)])
    do = np.concatenate([x.observed - y.observed for x, y in zip(ref, got, strict=True)])
    agree, lp = 0, []
    for ids, x, y in zip(texts, ref, got, strict=True):
        d1 = detect_ids(ids, KEY, expected_scores=x.expected, observed_scores=x.observed)
        d2 = detect_ids(ids, KEY, expected_scores=y.expected, observed_scores=y.observed)
        agree += flagged(d1) == flagged(d2)
        lp.append(abs(decision_log10_p(d1) - decision_log10_p(d2)))
    return {
        "e_max": float(np.abs(de).max()),
        "e_mean": float(np.abs(de).mean()),
        "o_max": float(np.abs(do).max()),
        "o_mean": float(np.abs(do).mean()),
        "agree": agree,
        "n": len(texts),
        "lp_max": float(max(lp)),
        "lp_median": float(np.median(lp)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=8, help="texts of each kind")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--backends",
        default="torch float32,torch int8,ort float32,ort int8",
        help="comma-separated; the first is the reference",
    )
    args = parser.parse_args()
    import onnxruntime
    import torch

    names = [n.strip() for n in args.backends.split(",") if n.strip()]
    texts = texts_of(args.texts)
    t0 = time.process_time()
    loaded = backends(names)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')}: {len(texts['watermarked'])} watermarked code "
        f"answers and {len(texts['human'])} human chunks of {LENGTH} tokens; torch "
        f"{torch.__version__} ({torch.get_num_threads()} thread), onnxruntime "
        f"{onnxruntime.__version__} (1 intra-op thread); loading took "
        f"{time.process_time() - t0:.0f} s CPU",
        flush=True,
    )
    ref_name = names[0]
    for t, p in SAMPLINGS:
        print(f"\nT = {t} / top-p {p}")
        for kind, group in texts.items():
            readings = {n: a.read(group, temperature=t, top_p=p) for n, a in loaded.items()}
            for name in names[1:]:
                c = compare(readings[ref_name], readings[name], group)
                print(
                    f"  {kind:11s} {name:13s} vs {ref_name}: E[s] max |diff| {c['e_max']:.2e}, "
                    f"mean {c['e_mean']:.2e}; f(q_x) max {c['o_max']:.2e}, mean "
                    f"{c['o_mean']:.2e}; decisions equal {c['agree']}/{c['n']}, |log10 p| "
                    f"diff max {c['lp_max']:.3f}, median {c['lp_median']:.4f}",
                    flush=True,
                )
        seconds = {
            n: cpu_per_check(a, texts["watermarked"], args.repeats, t, p) for n, a in loaded.items()
        }
        base = seconds[ref_name]
        print(
            f"  CPU per {LENGTH}-token check (median over texts, best of {args.repeats}): "
            + ", ".join(f"{n} {s:.3f} s ({base / s:.2f}x)" for n, s in seconds.items())
            + f"; bound {BOUND} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
