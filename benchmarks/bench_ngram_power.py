"""What the n-gram filter costs on real watermarked text (SmolLM2-135M, transformers backend).

Creative and coding prompts (bench_generate's) at temperature 1 and at 0.7 / top-p 0.9,
generated with the watermark on (and with ``--off`` once more with it off, the same key),
cached under ``$PROVENANCE_DATA_DIR/bench_ngram_power/``. For each set and each prefix of
50/100/200 tokens: the share of de-duplicated tokens the tokenizer's shipped table leaves
unscored, and the share detected at p <= 0.01 by vLLM's statistic (all de-duplicated tokens)
and by the filtered decision (with ``--off``, beside the false-positive share of both on the
unwatermarked generations). The transformers backend on one loaded core generates about 12
x 200 tokens in 5-9 minutes per set: ``--cells`` picks the sets.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ngram_power.py \
        [--creative 12 --coding 12] [--cells creative:T=1,coding:T=0.7] [--off]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.bench_generate import (  # noqa: E402
    KEY,
    _backend,
    _key_file,
    _requests,
    coding_prompts,
    creative_prompts,
)
from detector.decision.family import flagged  # noqa: E402
from detector.evidence.detection import detect_ids  # noqa: E402
from detector.paths import data_dir  # noqa: E402
from detector.text.tokenizers import load_tokenizer  # noqa: E402

PREFIXES = (50, 100, 200)
THRESHOLD = 0.01
SAMPLINGS = {"T=1": ("T=1", 1.0, 1.0), "T=0.7": ("T=0.7 top-p 0.9", 0.7, 0.9)}


def generations(
    prompts: dict[str, list[str]],
    cells: list[tuple[str, str]],
    arms: tuple[bool, ...],
    max_tokens: int,
) -> dict[str, list[list[int]]]:
    """Token ids per (kind, sampling, on/off), generated once and cached."""
    cache = data_dir() / "bench_ngram_power" / f"gen-{max_tokens}.json"
    found: dict[str, list[list[int]]] = json.loads(cache.read_text()) if cache.exists() else {}
    backend = None
    for (kind, sampling), on in itertools.product(cells, arms):
        items = prompts[kind]
        label, temperature, top_p = SAMPLINGS[sampling]
        tag = f"{kind}|{label}|{'on' if on else 'off'}|{len(items)}"
        if tag in found:
            continue
        if backend is None:
            backend = _backend("transformers", _key_file())
        t = time.perf_counter()
        out = backend.generate(_requests(items, max_tokens, on, temperature, top_p))
        found[tag] = [list(map(int, g.token_ids)) for g in out]
        print(f"generated {tag} in {time.perf_counter() - t:.0f} s", flush=True)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(found))
    return found


def row(texts: list[list[int]], n: int, table: Any) -> tuple[float, float, float]:
    """(share of de-duplicated tokens skipped, share flagged by vLLM's statistic, share flagged
    by the filtered decision) over the ``n``-token prefixes of ``texts``."""
    skipped = total = vllm = ours = 0
    for ids in texts:
        d = detect_ids(ids[:n], KEY, ngrams=table)
        skipped += d.num_common_tokens
        total += d.vllm_num_scored_tokens or 0
        vllm += (d.vllm_log10_p or 0.0) <= -2
        ours += flagged(d)
    return skipped / max(total, 1), vllm / len(texts), ours / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--creative", type=int, default=20)
    parser.add_argument("--coding", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--cells", default="creative:T=1,creative:T=0.7,coding:T=1,coding:T=0.7")
    parser.add_argument("--off", action="store_true", help="also generate unwatermarked text")
    options = parser.parse_args()
    cells = [(c.split(":")[0], c.split(":")[1]) for c in options.cells.split(",") if c]
    import torch

    torch.set_num_threads(1)
    prompts = {
        "creative": creative_prompts(options.creative),
        "coding": coding_prompts(options.coding),
    }
    arms = (True, False) if options.off else (True,)
    found = generations(prompts, cells, arms, options.max_tokens)
    table = load_tokenizer().ngram_table
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  table: {table and table.meta}")
    print(
        "| kind | sampling | n | tokens | skipped | power vLLM / filtered | FPR vLLM / filtered |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (kind, sampling), n in itertools.product(cells, PREFIXES):
        items, label = prompts[kind], SAMPLINGS[sampling][0]
        on = found[f"{kind}|{label}|on|{len(items)}"]
        off = found.get(f"{kind}|{label}|off|{len(items)}")
        skipped, p_vllm, p_ours = row(on, n, table)
        _, f_vllm, f_ours = row(off, n, table) if off else (0.0, float("nan"), float("nan"))
        print(
            f"| {kind} | {label} | {len(on)} | {n} | {100 * skipped:.1f}% "
            f"| {100 * p_vllm:.0f}% / {100 * p_ours:.0f}% "
            f"| {100 * f_vllm:.0f}% / {100 * f_ours:.0f}% |",
            flush=True,
        )


if __name__ == "__main__":
    main()
