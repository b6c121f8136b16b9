"""Generation benchmark: watermark overhead and detection power on SmolLM2-135M (CPU).

1. Throughput: tokens/s with the watermark on vs off, same backend, same prompts, batch 1 and
   8, for each backend (vLLM with our V1 processor; transformers). "Off" is the same engine with
   the requests opted out. Arms are interleaved and the best of ``--repeats`` is kept: on a
   shared machine other load only ever adds time. For vLLM, then the per-step costs behind
   the figure (``step_costs``).
2. Detection power (default backend): creative and coding prompts at temperature 1 and at
   temperature 0.7 / top-p 0.9; share detected at p <= 0.01 after 25/50/100/200 tokens, beside
   the false-positive share of the same detector (same key) on unwatermarked generations of the
   same prompts.

Default run is modest for a 2-core CPU (40 creative + 10 coding prompts); ``--full`` runs the
full set of 200 + 50. Run: ``python benchmarks/bench_generate.py [--full] [--backends vllm]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

KEY = 0x5EED_0F_BE_4C_11_AB_01  # a fixed benchmark key; the figures do not depend on its value
PREFIXES = (25, 50, 100, 200)
THRESHOLD = 0.01

_FORMS = (
    "a short story",
    "a poem",
    "a letter",
    "a diary entry",
    "a fable",
    "a dialogue",
    "a myth",
    "a speech",
    "song lyrics",
    "a travel log",
)
_SUBJECTS = (
    "a lighthouse keeper",
    "a lost robot",
    "the last bookshop in town",
    "a dragon who fears fire",
    "two rival bakers",
    "a city under the sea",
    "an astronaut's first night on Mars",
    "a haunted violin",
    "a fox learning to sail",
    "the end of winter",
    "a time-travelling librarian",
    "a village without clocks",
    "a retired pirate",
    "a garden on a rooftop",
    "the first day of school",
    "a storm over the mountains",
    "a detective cat",
    "a forgotten island",
    "a street musician",
    "the moon's vacation",
)
_TASKS = (
    "reverses a linked list",
    "parses a CSV file and sums a column",
    "checks whether a string is a palindrome",
    "implements binary search",
    "counts word frequencies in a text",
    "merges two sorted arrays",
    "validates an email address",
    "computes the n-th Fibonacci number with memoization",
    "flattens a nested list",
    "implements a simple LRU cache",
)
_LANGUAGES = ("Python", "JavaScript", "Rust", "Go", "Java")


def creative_prompts(n: int) -> list[str]:
    """Up to 200 distinct creative prompts; consecutive ones differ in form and subject."""
    pairs = [(_FORMS[(k + k // 20) % 10], _SUBJECTS[k % 20]) for k in range(200)]
    return [f"Write {form} about {subject}." for form, subject in pairs[:n]]


def coding_prompts(n: int) -> list[str]:
    """Up to 50 distinct coding prompts (task x language), varied from the first one on."""
    pairs = [(_TASKS[k % 10], _LANGUAGES[(k + k // 10) % 5]) for k in range(50)]
    return [f"Write a {lang} function that {task}. Show only the code." for task, lang in pairs[:n]]


def _key_file() -> Path:
    path = Path(tempfile.mkdtemp(prefix="bench-keys-")) / "keys.json"
    path.write_text(json.dumps({"bench": {"key": KEY}}))
    path.chmod(0o600)
    return path


def _backend(name: str, keys: Path) -> Any:
    if name == "vllm":
        from generator.vllm_backend import VLLMBackend

        return VLLMBackend(keys, default_key="bench", max_model_len=1024)
    from generator.config import KeyStore
    from generator.hf import TransformersBackend

    return TransformersBackend(KeyStore.from_file(keys), default_key="bench")


def _requests(
    prompts: list[str],
    max_tokens: int,
    watermark: bool,
    temperature: float = 1.0,
    top_p: float = 1.0,
    ignore_eos: bool = True,
) -> list[Any]:
    from generator.core import SamplingSettings
    from generator.types import GenerationRequest

    sampling = SamplingSettings(temperature=temperature, top_p=top_p)
    return [
        GenerationRequest(
            messages=({"role": "user", "content": p},),
            max_tokens=max_tokens,
            sampling=sampling,
            watermark=watermark,
            ignore_eos=ignore_eos,
        )
        for p in prompts
    ]


def throughput(backend: Any, batch: int, tokens: int, repeats: int) -> tuple[float, float]:
    """Best tokens/s (on, off) over ``repeats`` interleaved rounds of one batch."""
    prompts = creative_prompts(batch)
    best = {True: 0.0, False: 0.0}
    backend.generate(_requests(prompts, 4, True))  # warm-up
    for _ in range(repeats):
        for on in (True, False):
            t = time.perf_counter()
            out = backend.generate(_requests(prompts, tokens, on))
            rate = sum(len(g.token_ids) for g in out) / (time.perf_counter() - t)
            best[on] = max(best[on], rate)
    return best[True], best[False]


def detected_shares(generations: list[Any]) -> dict[int, float]:
    """Share of generations detected at p <= THRESHOLD after each prefix length."""
    from detector.evidence.detection import detect_ids

    shares = {}
    for n in PREFIXES:
        hits = [detect_ids(list(g.token_ids[:n]), KEY).p_value <= THRESHOLD for g in generations]
        shares[n] = sum(hits) / len(hits)
    return shares


def power(backend: Any, prompts: dict[str, list[str]], max_tokens: int) -> list[dict[str, Any]]:
    rows = []
    for (label, temperature, top_p), (kind, items) in itertools.product(
        (("T=1", 1.0, 1.0), ("T=0.7 top-p 0.9", 0.7, 0.9)), prompts.items()
    ):
        t = time.perf_counter()
        marked = backend.generate(_requests(items, max_tokens, True, temperature, top_p))
        plain = backend.generate(_requests(items, max_tokens, False, temperature, top_p))
        rows.append(
            {
                "kind": kind,
                "sampling": label,
                "n": len(items),
                "power": detected_shares(marked),
                "fpr": detected_shares(plain),
                "seconds": time.perf_counter() - t,
            }
        )
        _print_power_row(rows[-1])
    return rows


def _print_power_row(r: dict[str, Any]) -> None:
    pw = " ".join(f"{100 * r['power'][n]:5.1f}" for n in PREFIXES)
    fp = " ".join(f"{100 * r['fpr'][n]:4.1f}" for n in PREFIXES)
    print(f"| {r['kind']:8} | {r['sampling']:16} | {r['n']:3} | {pw} | {fp} |", flush=True)


def step_costs(repeats: int) -> None:
    """Per decode step on real SmolLM2 logits: our V1 processor's whole work (processing, keyed
    draw, forcing) and vLLM's CPU sampler (``fused_gumbel_argmax``) on plain vs forced rows,
    which is why the watermarked arm can come out faster. Best of ``repeats`` interleaved."""
    import torch
    import vllm._C  # noqa: F401  (registers torch.ops._C)

    from benchmarks.bench_kernels import cpu_times, smollm2_logits
    from detector.core.config import KeyConfig
    from generator.core import RowState, SamplingSettings, force_tokens, watermark_step
    from kernels.cpu_scan import warm_up

    warm_up()
    print("\nper decode step, ms (SmolLM2 T=1 logits, 1 thread)")
    print("| batch | ours: process + draw + force | vLLM sampler, plain rows | ... forced rows |")
    for batch in (1, 8):
        real = smollm2_logits(batch)
        if real is None:
            print("(the converted SmolLM2 is not in var/models: run `make run` once)")
            return
        rows = [
            RowState(KeyConfig(key=KEY), SamplingSettings(), [1, 2, 3], [5, 6, 7, i])
            for i in range(batch)
        ]

        def ours(real=real, rows=rows) -> None:
            logits = real.clone()
            force_tokens(logits, watermark_step(logits, rows, penalties=True, inplace=True))

        forced = real.clone()
        force_tokens(forced, watermark_step(forced, rows, penalties=True, inplace=True))
        seeds = torch.randint(0, 2**31, (batch,))
        t_clone, t_ours, t_plain, t_forced = cpu_times(
            [
                real.clone,  # ours clones its input each call: subtracted below
                ours,
                partial(torch.ops._C.fused_gumbel_argmax, real, seeds),
                partial(torch.ops._C.fused_gumbel_argmax, forced, seeds),
            ],
            repeats,
        )
        print(
            f"| {batch:5} | {(t_ours - t_clone) * 1e3:28.3f} | {t_plain * 1e3:24.3f} "
            f"| {t_forced * 1e3:15.3f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="vllm,transformers")
    parser.add_argument("--power-backend", default="vllm")
    parser.add_argument("--full", action="store_true", help="200 creative + 50 coding prompts")
    parser.add_argument("--creative", type=int, default=40)
    parser.add_argument("--coding", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=64, help="tokens per throughput run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-power", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    keys = _key_file()
    names = [b for b in args.backends.split(",") if b]
    if args.power_backend not in names and not args.skip_power:
        names.append(args.power_backend)
    print(f"SmolLM2-135M-Instruct fp32, CPU, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    for name in names:
        t = time.perf_counter()
        backend = _backend(name, keys)
        print(f"\n== {name}: ready in {time.perf_counter() - t:.1f} s")
        if not args.skip_throughput and name in args.backends.split(","):
            print("| batch | on tok/s | off tok/s | overhead |")
            for batch in (1, 8):
                on, off = throughput(backend, batch, args.tokens, args.repeats)
                print(
                    f"| {batch:5} | {on:8.1f} | {off:9.1f} | {100 * (off - on) / off:7.1f}% |",
                    flush=True,
                )
        if not args.skip_throughput and name == "vllm":
            step_costs(max(50, 20 * args.repeats))
        if not args.skip_power and name == args.power_backend:
            n_creative, n_coding = (200, 50) if args.full else (args.creative, args.coding)
            prompts = {"creative": creative_prompts(n_creative), "coding": coding_prompts(n_coding)}
            print(
                f"\ndetected at p <= {THRESHOLD} (%) after {PREFIXES} tokens | "
                f"false positives on unwatermarked generations (%)"
            )
            print("| kind | sampling | n | power 25/50/100/200 | FPR 25/50/100/200 |")
            power(backend, prompts, args.max_tokens)
        getattr(backend, "close", lambda: None)()


if __name__ == "__main__":
    main()
