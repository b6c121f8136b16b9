"""Benchmark of the keyed Gumbel sampler; prints its figures.

CPU section (always): the generator's hot path, one decode step at V=49152 (SmolLM2), B=1
and 8: the fast exact draw (``kernels.cpu_scan``: Numba-compiled Philox, bucketed noise bounds)
vs the eager full scan vs plain torch Gumbel-max sampling (no PRF).
GPU section (when CUDA is present): the fused Triton kernel vs a plain Gumbel-max sampler
and vs torch.multinomial(softmax) at B in {1, 8, 64, 256}, V in {32000, 152064}, bf16 and
fp32, with peak extra memory. Run: ``python benchmarks/bench_kernels.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from detector.core.config import key_int64  # noqa: E402
from kernels.gumbel_sample import gumbel_sample, gumbel_sample_reference  # noqa: E402


def keys_tensor(keys: list[int], device: str = "cpu") -> torch.Tensor:
    return torch.tensor([key_int64(k) for k in keys], dtype=torch.int64, device=device)


def cpu_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Best-of-``repeat`` seconds of each of ``fns``, run interleaved (one warm-up each): on
    a shared machine, load from other processes only ever adds time, and interleaving
    exposes all of them to it alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, acc in zip(fns, times, strict=True):
            t = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t)
    return [min(acc) for acc in times]


def plain_gumbel(logits: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
    u = torch.rand(logits.shape, generator=gen, device=logits.device)
    return torch.argmax(logits.float() - torch.log(-torch.log(u.clamp_min(1e-20))), dim=-1)


def lm_like(b: int, vocab: int, slope: float, gen: torch.Generator) -> torch.Tensor:
    """Rank-r token at logit -slope*log(r), shuffled: Zipf-like next-token distributions."""
    base = -slope * torch.arange(1, vocab + 1).float().log()
    return torch.stack([base[torch.randperm(vocab, generator=gen)] for _ in range(b)])


PROSE = (
    "The old lighthouse keeper climbed the spiral stairs every evening, carrying a lamp and a "
    "notebook in which he recorded the colour of the sea, the shape of the clouds and the names "
    "of the ships that passed."
)


def smollm2_logits(b: int) -> torch.Tensor | None:
    """Real next-token logits [b, 49152] of the embedded SmolLM2 on prose (T=1), or None
    when the converted model is not in the data directory (``make run`` converts it)."""
    data = Path(os.environ.get("PROVENANCE_DATA_DIR", Path(__file__).resolve().parents[1] / "var"))
    path = data / "models" / "smollm2-135m-instruct"
    if not (path / "config.json").is_file():
        return None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    lm = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    ids = tok(PROSE, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = lm(ids).logits[0]  # [n, V]
    return logits[torch.linspace(5, logits.shape[0] - 1, b).long()]


def top_p(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Mask with -inf all but the smallest set of tokens holding probability p (per row)."""
    sorted_x, order = logits.sort(dim=-1, descending=True)
    cum = sorted_x.softmax(dim=-1).cumsum(dim=-1)
    drop = cum - sorted_x.softmax(dim=-1) >= p
    return logits.scatter(1, order, sorted_x.masked_fill(drop, float("-inf")))


def cpu_rows(b: int, vocab: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    topk = torch.full((b, vocab), float("-inf"))
    topk.scatter_(1, torch.randint(0, vocab, (b, 50), generator=gen), 0.0)
    rows = {
        "zipf slope 3 (peaked)": lm_like(b, vocab, 3.0, gen),
        "zipf slope 1.5 (flat)": lm_like(b, vocab, 1.5, gen),
        "randn sd 10": torch.randn(b, vocab, generator=gen) * 10,
        "randn sd 1 (flat)": torch.randn(b, vocab, generator=gen),
        "top-k 50 masked": topk + torch.randn(b, vocab, generator=gen),
    }
    real = smollm2_logits(b)
    if real is not None:
        rows["SmolLM2 T=1"] = real
        rows["SmolLM2 T=0.7"] = real / 0.7
        rows["SmolLM2 T=1 top-p 0.95"] = top_p(real, 0.95)
    return rows


def cpu_line(name: str, x: torch.Tensor, gen: torch.Generator, repeat: int) -> str:
    b, vocab = x.shape
    keys = keys_tensor([(0x9E3779B97F4A7C15 * (i + 1)) % 2**64 for i in range(b)])
    ctx = torch.randint(-1, vocab, (b, 4), generator=gen)
    mask = torch.ones(b, dtype=torch.bool)
    pruned, full, plain = cpu_times(
        [
            lambda: gumbel_sample_reference(x, keys, ctx, mask),
            lambda: gumbel_sample_reference(x, keys, ctx, mask, prune=False),
            lambda: plain_gumbel(x, gen),
        ],
        repeat,
    )
    cells = "".join(f"{t * 1e3:9.2f} ({t * 1e3 / b:5.2f})" for t in (pruned, full, plain))
    return f"{name:<24}{b:>3}{cells}{full / pruned:>12.2f}x"


def cpu_section(repeat: int) -> None:
    torch.set_num_threads(1)
    from kernels.cpu_scan import warm_up

    warm_up()  # the compile (a second or two, then cached) is start-up cost, not per step
    vocab = 49152
    gen = torch.Generator().manual_seed(0)
    print(f"== CPU, 1 thread, V={vocab}: ms per decode step (ms per row)")
    head = ["fast exact", "full scan", "plain gumbel"]
    print(f"{'logits':<24}{'B':>3}" + "".join(f"{h:>17}" for h in head) + f"{'full/fast':>13}")
    for b in (1, 8):
        for name, x in cpu_rows(b, vocab, gen).items():
            print(cpu_line(name, x, gen, repeat))


def gpu_time(fn: Callable[[], object], repeat: int) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeat / 1e3


def peak_extra(fn: Callable[[], object]) -> int:
    """Bytes allocated by ``fn`` on top of what was live before it (the inputs)."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def gpu_section(repeat: int) -> None:
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    print(f"== GPU: {name}, {time.strftime('%Y-%m-%d')}, torch {torch.__version__}")
    print(
        f"{'dtype':<6}{'B':>5}{'V':>8}{'fused us':>10}{'gumbel us':>11}{'multinom us':>13}"
        f"{'fused/gumbel':>14}{'fused extra':>13}{'gumbel extra':>14}"
    )
    gen = torch.Generator(device=dev).manual_seed(0)
    for dtype in (torch.bfloat16, torch.float32):
        for vocab in (32000, 152064):
            for b in (1, 8, 64, 256):
                x = (torch.randn(b, vocab, device=dev, generator=gen) * 3).to(dtype)
                keys = keys_tensor([(7 * i + 1) % 2**64 for i in range(b)], device=dev)
                ctx = torch.randint(-1, vocab, (b, 4), device=dev, generator=gen)
                mask = torch.ones(b, dtype=torch.bool, device=dev)

                def fused(x=x, keys=keys, ctx=ctx, mask=mask):
                    return gumbel_sample(x, keys, ctx, mask)

                def gumbel(x=x):
                    return plain_gumbel(x, gen)

                def multinomial(x=x):
                    return torch.multinomial(torch.softmax(x.float(), dim=-1), 1, generator=gen)

                t_f, t_g, t_m = (gpu_time(f, repeat) for f in (fused, gumbel, multinomial))
                m_f, m_g = peak_extra(fused), peak_extra(gumbel)
                print(
                    f"{str(dtype)[6:]:<6}{b:>5}{vocab:>8}{t_f * 1e6:>10.1f}{t_g * 1e6:>11.1f}"
                    f"{t_m * 1e6:>13.1f}{t_f / t_g:>13.2f}x{m_f / 2**20:>11.2f}MB"
                    f"{m_g / 2**20:>12.1f}MB"
                )
    print("target: fused/gumbel <= 1.05 at B=256, V=152064; fused extra memory O(B), no [B, V]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--gpu-only", action="store_true")
    args = parser.parse_args()
    if not args.gpu_only:
        cpu_section(repeat=3 if args.quick else 9)
    if torch.cuda.is_available():
        gpu_section(repeat=5 if args.quick else 50)
    else:
        print("== GPU: no CUDA device here; run benchmarks/gpu_check.sh on a CUDA machine")


if __name__ == "__main__":
    main()
