"""Detection power on the real generator's text, per statistic, with the false-positive rates
on human text of three genres measured in the same run.

1. Texts: SmolLM2-135M-Instruct on vLLM with the project's processor, benchmark key fixed
   (``benchmarks.generations``): creative and code prompts at T=1 and at T=0.7/top-p 0.9
   (``ignore_eos``, so every text reaches ``--max-tokens``), and the short math word problems
   of ``benchmarks/data/math_word_problems.txt`` answered at T=0.7 (natural answers, which may
   end before 200 tokens: such an answer is tested whole at the longer prefixes). One prompt
   per text (the keyed draw makes a prompt's text nearly deterministic). Each cell is
   generated once, under the vLLM lock, taken per cell, and cached in
   ``$PROVENANCE_DATA_DIR/power/``.
2. Detection after 50 / 100 / 200 tokens at alpha 1% by each statistic of
   ``benchmarks.power.STATISTICS``. The model-assisted ones need the embedded SmolLM2 to read
   each text (``detector.reading.model``, at the cell's own temperature and top-p); its ``E[s]`` per
   token is cached beside the texts.
3. False positives in the same run: 200-token chunks of held-out human prose, code and
   templated text (``benchmarks.dispersion``), tested at the same prefixes by the same
   statistics (the model reads ``--assist-chunks`` of them per genre, at T=0.7/top-p 0.9, the
   sampling of the target cell); then the per-key dispersion of the flag counts over
   ``--keys`` random keys, which also gives each statistic's mean false-positive rate over
   keys x chunks tests.

Run: ``.venv/bin/python benchmarks/bench_power.py [--texts 40] [--chunks 500] [--keys 40]``
(it takes ``/tmp/provenance-vllm.lock`` itself while it generates; do not wrap it in flock).
On the shared 2-core machine the defaults cost about an hour of generation and as much of
model reading; docs/benchmarks.md gives the smaller command its figures come from
(``--assist-cells`` and ``--assist-chunks`` bound the model's reading; ``--reading
onnxruntime`` reads through ONNX Runtime, ``detector.reading.ort``, cached apart).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.bench_generate import KEY, _requests, coding_prompts, creative_prompts  # noqa: E402
from benchmarks.generations import cache_dir, cached_cell, fingerprint  # noqa: E402
from benchmarks.power import (  # noqa: E402
    MODEL_STATISTICS,
    PREFIXES,
    THRESHOLD,
    available,
    detection_rates,
    key_dispersion,
    prepare,
)

MATH_FILE = Path(__file__).resolve().parent / "data" / "math_word_problems.txt"
MATH_PROMPT = "Solve this problem step by step and give the final answer.\n\n{}"
TARGETS = {"code T=0.7 top-p 0.9": {200: 0.85, 100: 0.65}}
FPR_LIMIT = 0.012


def math_problems() -> list[str]:
    lines = MATH_FILE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def cells(texts: int) -> dict[str, dict[str, Any]]:
    """Each cell's prompts and sampling (temperature ``t``, top-p ``p``, ``eos``: whether
    generation ignores the end of the answer): ``texts`` creative and coding prompts, and for
    the target cell (code at T=0.7/top-p 0.9) and math every one of the 50 coding prompts and
    50 problems."""
    creative = creative_prompts(texts)
    code = coding_prompts(50)
    math = [MATH_PROMPT.format(p) for p in math_problems()]
    return {
        "creative T=1": {"prompts": creative, "t": 1.0, "p": 1.0, "eos": True},
        "creative T=0.7 top-p 0.9": {"prompts": creative, "t": 0.7, "p": 0.9, "eos": True},
        "code T=1": {"prompts": code[:texts], "t": 1.0, "p": 1.0, "eos": True},
        "code T=0.7 top-p 0.9": {"prompts": code, "t": 0.7, "p": 0.9, "eos": True},
        "math T=0.7": {"prompts": math, "t": 0.7, "p": 1.0, "eos": False},
    }


def generate_cell(name: str, spec: dict[str, Any], max_tokens: int) -> list[np.ndarray]:
    """The cell's watermarked token ids, generated (under the vLLM lock) unless cached."""

    def make(backend: Any) -> dict[str, Any]:
        requests = _requests(
            spec["prompts"], max_tokens, True, spec["t"], spec["p"], ignore_eos=spec["eos"]
        )
        return {"token_ids": [list(g.token_ids) for g in backend.generate(requests)]}

    slug = name.replace(" ", "_").replace("=", "").replace("/", "")
    t0 = time.perf_counter()
    data = cached_cell(cache_dir("power") / f"{slug}.json", spec | {"max_tokens": max_tokens}, make)
    ids = [np.asarray(x, np.int64) for x in data["token_ids"]]
    tokens = sum(x.size for x in ids)
    print(
        f"{name}: {len(ids)} texts, {tokens} tokens, generated in {data['seconds']:.0f} s"
        f" ({tokens / data['seconds']:.1f} tokens/s); loaded in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    return ids


def _slug(name: str) -> str:
    return name.replace(" ", "_").replace("=", "").replace("/", "")


def expected_scores(
    name: str, texts: list[np.ndarray], temperature: float, top_p: float, runtime: str = "torch"
) -> list[Any] | None:
    """The embedded model's reading (``E[s]`` and observed score) of every token of
    ``texts`` (cached), or None where this checkout has no ``detector.reading.model``.
    ``runtime``: "torch" (``detector.reading.model``) or "onnxruntime"
    (``detector.reading.ort``, float32), cached apart."""
    try:
        from detector.reading.model import ModelReading, load_assist
    except ImportError:
        return None
    from generator.models import resolve_model

    spec = {"ids": [x.tolist() for x in texts], "t": temperature, "p": top_p}
    tag = "" if runtime == "torch" else f"{runtime}-"
    path = cache_dir("power") / f"reading-{tag}{_slug(name)}-{fingerprint(spec)}.npz"
    if path.is_file():
        with np.load(path) as got:
            return [ModelReading(got[f"e{i}"], got[f"o{i}"]) for i in range(len(texts))]
    t0 = time.perf_counter()
    if runtime == "onnxruntime":
        from detector.reading.ort import load_ort_assist

        assist = load_ort_assist(str(resolve_model(None)))
    else:
        assist = load_assist(str(resolve_model(None)))
    out = assist.read(texts, temperature=temperature, top_p=top_p)
    arrays = {f"e{i}": r.expected for i, r in enumerate(out)}
    np.savez(path, **arrays, **{f"o{i}": r.observed for i, r in enumerate(out)})
    tokens = sum(x.size for x in texts)
    print(f"model read {name}: {tokens} tokens in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def human_chunks(limit: int, size: int) -> dict[str, list[np.ndarray]]:
    """Held-out ``size``-token chunks of each genre (the half bench_dispersion tests)."""
    from benchmarks.dispersion import chunks, genre_documents, split
    from detector.text.tokenizers import load_tokenizer

    tok = load_tokenizer()
    out = {}
    for genre, docs in genre_documents().items():
        _, test = split([tok.encode(d) for d in docs])
        out[genre] = chunks(test, size, limit)
    return out


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def _fpr_cell(found: tuple[int, dict[int, float]] | None) -> str:
    if found is None:
        return "–"
    n, rates = found
    return " / ".join(_pct(rates[k]) for k in PREFIXES) + f" (n={n})"


def print_table(power: dict[str, dict], fpr: dict[str, dict], lengths: dict[str, str]) -> None:
    genres = list(fpr)
    head = " | ".join(f"FPR {g} 50/100/200 %" for g in genres)
    print(f"\n| cell | statistic | n | detected 50 / 100 / 200 % | {head} |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in genres) + " |")
    for cell, by_stat in power.items():
        for stat, (n, rates) in by_stat.items():
            det = " / ".join(_pct(rates[k]) for k in PREFIXES)
            fp = " | ".join(_fpr_cell(fpr[g].get(stat)) for g in genres)
            print(f"| {cell} | {stat} | {n} | {det} | {fp} |")
    print("\nlengths (tokens, min / median / max):", lengths)


def check_targets(
    power: dict[str, dict], fpr: dict[str, dict], over_keys: dict[tuple[str, str], float]
) -> None:
    """Power targets on the target cell; the FPR target on each genre, judged on the mean
    over random keys (keys x chunks tests), with the fixed key's worst prefix beside it (one
    key's realization: its chunks' tests are correlated, see the dispersion table)."""
    print("\ntargets:")
    for cell, goals in TARGETS.items():
        for stat in ("model-assisted", "default"):
            if stat not in power.get(cell, {}):
                print(f"  {cell} {stat}: not measured (statistic not available)")
                continue
            for k, goal in goals.items():
                got = power[cell][stat][1][k]
                verdict = "met" if got >= goal else "NOT met"
                print(f"  {cell} {stat} at {k}: {_pct(got)}% (>= {100 * goal:.0f}%) {verdict}")
    for genre, by_stat in fpr.items():
        for stat, (n, rates) in by_stat.items():
            mean = over_keys[(genre, stat)]
            verdict = "met" if mean <= FPR_LIMIT else "NOT met"
            print(
                f"  FPR {genre} {stat}: mean over keys at {max(PREFIXES)} tokens {_pct(mean)}% "
                f"(<= 1.2%) {verdict}; fixed key, worst prefix {_pct(max(rates.values()))}% of {n}"
            )


def dispersion_table(
    human: dict[str, list[np.ndarray]], read: dict[str, list], keys: np.ndarray
) -> dict[tuple[str, str], float]:
    """Print the per-key dispersion of each statistic on each genre; the mean FPR over keys."""
    print(f"\nper-key dispersion, {len(keys)} random keys, {max(PREFIXES)}-token chunks, alpha 1%")
    print("| genre | statistic | chunks | mean FPR % | variance / mean | worst key % |")
    print("| --- | --- | --- | --- | --- | --- |")
    means = {}
    for genre, pieces in human.items():
        prepared = prepare(pieces)
        groups = [(prepared, available(prepared))]
        if genre in read:
            groups.append((read[genre], sorted(MODEL_STATISTICS)))
        for group, names in groups:
            for stat in names:
                counts = key_dispersion(group, stat, keys)
                n = len(group)
                means[(genre, stat)] = float(counts.mean() / n)
                ratio = counts.var(ddof=1) / max(counts.mean(), 1e-12)
                print(
                    f"| {genre} | {stat} | {n} | {_pct(counts.mean() / n)} | {ratio:.2f} "
                    f"| {_pct(counts.max() / n)} |",
                    flush=True,
                )
    return means


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--texts", type=int, default=40, help="texts per cell but the target's and math's"
    )
    parser.add_argument("--max-tokens", type=int, default=260)
    parser.add_argument("--chunks", type=int, default=500, help="human chunks per genre")
    parser.add_argument("--keys", type=int, default=40, help="random keys for dispersion")
    parser.add_argument(
        "--cells",
        default="",
        help="comma-separated cell names, generated in that order (default all)",
    )
    parser.add_argument(
        "--assist-chunks", type=int, default=100, help="human chunks per genre the model reads"
    )
    parser.add_argument(
        "--assist-cells", default="", help="comma-separated cells the model reads (default all)"
    )
    parser.add_argument("--no-assist", action="store_true", help="model-free statistics only")
    parser.add_argument(
        "--reading",
        choices=("torch", "onnxruntime"),
        default="torch",
        help="the runtime of the model's reading (onnxruntime: float32, detector.reading.ort)",
    )
    parser.add_argument("--generate-only", action="store_true")
    args = parser.parse_args()
    args.assist_cells = [c for c in args.assist_cells.split(",") if c]
    chosen = cells(args.texts)
    if args.cells:
        chosen = {k: chosen[k] for k in args.cells.split(",") if k in chosen}  # in that order
    texts = {name: generate_cell(name, spec, args.max_tokens) for name, spec in chosen.items()}
    if args.generate_only:
        return
    print(f"\n{time.strftime('%Y-%m-%d %H:%M')} detection at alpha {THRESHOLD}, key fixed")
    power = {}
    for name, ids in texts.items():
        spec = chosen[name]
        reads = not args.no_assist and (not args.assist_cells or name in args.assist_cells)
        expected = expected_scores(name, ids, spec["t"], spec["p"], args.reading) if reads else None
        prepared = prepare(ids, expected)
        power[name] = {
            s: (len(ids), detection_rates(prepared, s, KEY)) for s in available(prepared)
        }
    fpr: dict[str, dict] = {}
    human = human_chunks(args.chunks, max(PREFIXES))
    read: dict[str, list] = {}
    for genre, pieces in human.items():
        prepared = prepare(pieces)
        fpr[genre] = {
            s: (len(pieces), detection_rates(prepared, s, KEY)) for s in available(prepared)
        }
        some = pieces[: args.assist_chunks]
        expected = (
            None
            if args.no_assist
            else expected_scores(f"human {genre}", some, 0.7, 0.9, args.reading)
        )
        if expected is not None:
            read[genre] = prepare(some, expected)
            for s in set(available(read[genre])) - set(fpr[genre]):
                fpr[genre][s] = (len(some), detection_rates(read[genre], s, KEY))
    lengths = {
        n: f"{min(x.size for x in v)} / {int(np.median([x.size for x in v]))} / "
        f"{max(x.size for x in v)}"
        for n, v in texts.items()
    }
    print_table(power, fpr, lengths)
    keys = np.random.default_rng(7).integers(1, 2**63, args.keys)
    over_keys = dispersion_table(human, read, keys)
    check_targets(power, fpr, over_keys)


if __name__ == "__main__":
    main()
