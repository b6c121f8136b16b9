"""Request fields the gate lets through under enforcement, measured against vLLM's engine.

One vLLM server (``python -m generator serve --backend vllm --enforce``, the CPU engine) on a
copy of the embedded SmolLM2 whose ``generation_config.json`` carries sampling defaults, and
one client that may not opt out. For each field it asks whether the field changes what the
keyed draw writes:

- ``seed``: the same request with no seed and seeds 1, 1, 2, under a ``gumbel`` key and a
  ``dual_key_gumbel`` key (alpha 0.5, so that routing shows): identical token ids mean the seed
  does not reach the draw; for the dual key, whether equal seeds route alike. Offline, how far
  a seed searched among ``--seeds`` candidates moves the routing (tokens routed to key B of
  100, alpha 0.1), were the seed to drive it;
- ``continue_final_message`` (an assistant prefill): whether the reply repeats the prefill,
  and the evidence the reply carries (its header and the detector's log10 p) beside a plain
  request's;
- the model's ``generation_config`` (``--genconfig``, default ``{"top_k": 1}``): what a request
  that sets no sampling field is served with, and one that sets them explicitly.

Run: ``python benchmarks/bench_gate_requests.py [--tokens 60] [--seeds 100000]``
(one engine: never beside another; ~2-5 min on 2 cores). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

KEY_A, KEY_B = 0x5EC12E7A11CE0001, 0x0DDBA11CAFE00002
STORY = "Write a long, vivid story about a lighthouse keeper."
PREFILL = "The lighthouse keeper, an old man named"
NEUTRAL = {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _model_copy(tmp: Path, genconfig: dict) -> Path:
    """The embedded model's files, linked, with ``genconfig`` merged into its generation
    config (the original directory is not touched)."""
    from generator.models import embedded_model_dir

    source = embedded_model_dir()
    target = tmp / "smollm2-genconfig"
    target.mkdir()
    for item in source.iterdir():
        if item.name != "generation_config.json":
            (target / item.name).symlink_to(item)
    config = json.loads((source / "generation_config.json").read_text())
    (target / "generation_config.json").write_text(json.dumps(config | genconfig))
    return target


def _routing_search(seeds: int, tokens: int = 100, alpha: float = 0.1) -> dict:
    """Tokens routed to key B among ``tokens`` (``RowState.draw_key``'s draws from a generator
    seeded with the request's seed): the mean over seeds and the most a search finds."""
    import torch

    counts = []
    for seed in range(seeds):
        g = torch.Generator().manual_seed(seed)
        counts.append(int((torch.rand(tokens, generator=g) < alpha).sum()))
    best = max(range(seeds), key=counts.__getitem__)
    mean = sum(counts) / seeds
    # The combined score weighs key A by 1 - alpha and key B by alpha: a token routed to B
    # adds alpha of its excess score, one routed to A 1 - alpha of it.
    kept = ((tokens - counts[best]) * (1 - alpha) + counts[best] * alpha) / (
        (tokens - mean) * (1 - alpha) + mean * alpha
    )
    return {
        "seeds_searched": seeds,
        "tokens": tokens,
        "alpha": alpha,
        "mean_routed_to_b": round(mean, 2),
        "most_routed_to_b": counts[best],
        "best_seed": best,
        "expected_excess_kept_at_best_seed": round(kept, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=60)
    parser.add_argument("--seeds", type=int, default=100_000)
    parser.add_argument("--genconfig", default='{"top_k": 1}')
    args = parser.parse_args()

    import httpx

    from detector.evidence.detection import detect_ids
    from generator.auth import issue_token

    result: dict = {"routing_search": _routing_search(args.seeds)}
    tmp = Path(tempfile.mkdtemp(prefix="bench-gate-"))
    keys = tmp / "keys.json"
    keys.write_text(
        json.dumps(
            {
                "team-a": {"key": KEY_A},
                "team-b": {"key": KEY_B, "algorithm": "dual_key_gumbel", "alpha": 0.5},
            }
        )
    )
    clients = tmp / "clients.json"
    token = issue_token(clients, "app", ["team-a", "team-b"], opt_out=False)
    genconfig = json.loads(args.genconfig)
    model = _model_copy(tmp, genconfig)
    port, log = _free_port(), tmp / "server.log"
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", PROVENANCE_RECORD_DIR=str(tmp / "rec"))
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "generator", "serve", "--backend", "vllm", "--enforce"]
            + ["--keys", str(keys), "--clients", str(clients), "--model", str(model)]
            + ["--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {token}"}
    started = time.monotonic()
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > 600:
                raise SystemExit("server did not start in 600 s")
            time.sleep(1)
        result["engine_start_s"] = round(time.monotonic() - started, 1)

        def ask(messages, key="team-a", **extra):
            body = {
                "model": model.name,
                "messages": messages,
                "max_tokens": args.tokens,
                "ignore_eos": True,
                "return_token_ids": True,
                "vllm_xargs": {"watermark_key": key},
                **extra,
            }
            r = httpx.post(url + "/v1/chat/completions", json=body, headers=auth, timeout=300)
            if r.status_code != 200:
                return {"status": r.status_code, "error": r.json()["error"]["message"]}
            choice = r.json()["choices"][0]
            return {
                "status": 200,
                "ids": choice["token_ids"],
                "text": choice["message"]["content"],
                "watermarked": r.headers.get("x-provenance-watermarked"),
                "expected_log10_p": r.headers.get("x-provenance-expected-log10-p"),
            }

        story = [{"role": "user", "content": STORY}]

        # seed: does it reach the keyed draw?
        seeds: dict = {}
        for key, algorithm in (("team-a", "gumbel"), ("team-b", "dual_key_gumbel")):
            replies = {
                label: ask(story, key, **NEUTRAL, **({} if seed is None else {"seed": seed}))
                for label, seed in (("none", None), ("1", 1), ("1 again", 1), ("2", 2))
            }
            secret, alpha = (KEY_A, 0.1) if key == "team-a" else (KEY_B, 0.5)
            first = replies["none"]["ids"]
            seeds[algorithm] = {
                label: {
                    "status": r["status"],
                    "same_ids_as_no_seed": r.get("ids") == first,
                    "first_difference": next(
                        (
                            i
                            for i, (a, b) in enumerate(zip(r["ids"], first, strict=False))
                            if a != b
                        ),
                        None,
                    )
                    if "ids" in r
                    else None,
                    "detector_log10_p": round(
                        detect_ids(r["ids"], secret, algorithm=algorithm, alpha=alpha).log10_p, 1
                    )
                    if "ids" in r
                    else None,
                    "expected_log10_p": r.get("expected_log10_p"),
                }
                for label, r in replies.items()
            }
            seeds[algorithm]["equal_seeds_alike"] = replies["1"].get("ids") == replies[
                "1 again"
            ].get("ids")
        result["seed"] = seeds

        # an assistant prefill
        plain = ask(story, **NEUTRAL)
        prefilled = ask(
            story + [{"role": "assistant", "content": PREFILL}],
            continue_final_message=True,
            add_generation_prompt=False,
            **NEUTRAL,
        )
        result["continue_final_message"] = {
            name: {
                "status": r["status"],
                "reply_starts_with_prefill": r.get("text", "").startswith(PREFILL),
                "reply_head": r.get("text", "")[:60],
                "watermarked": r.get("watermarked"),
                "expected_log10_p": r.get("expected_log10_p"),
                "detector_log10_p": round(detect_ids(r["ids"], KEY_A).log10_p, 1)
                if "ids" in r
                else None,
            }
            for name, r in (("plain", plain), ("prefill", prefilled))
        }

        # the model's generation_config, applied by vLLM to what the request leaves unset
        unset, explicit = ask(story), ask(story, **NEUTRAL)
        result["generation_config"] = {
            "model_defaults": genconfig,
            **{
                name: {
                    "status": r["status"],
                    "watermarked": r.get("watermarked"),
                    "expected_log10_p": r.get("expected_log10_p"),
                    "detector_log10_p": round(detect_ids(r["ids"], KEY_A).log10_p, 1)
                    if "ids" in r
                    else None,
                    "error": r.get("error"),
                }
                for name, r in (("no sampling field", unset), ("explicit neutral", explicit))
            },
        }
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
