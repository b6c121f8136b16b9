"""GPU check (vLLM >= 0.33 on CUDA): our V2 processor and upstream's built-in watermark, both
detected by our detector. Run on a CUDA machine: ``python -m generator.gpu_check [--out FILE]``.

1. vLLM's OpenAI server with Model Runner V2 (``VLLM_USE_V2_MODEL_RUNNER=1``) and
   ``--logits-processors generator.vllm_v2:WatermarkLogitsProcessorV2``; keys by name from a
   key file.
2. The same model with upstream's ``--watermark-config '{"algorithm":"gumbel","key":K}'`` (the
   check uses a throwaway key: upstream takes it on the command line).
Each generates a few 200-token completions; the script prints (and writes) one JSON record
with the date, the vLLM version and each arm's p-values under the right key and a wrong key.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROMPTS = (
    "Write a story about a lighthouse keeper.",
    "Describe a storm over the mountains.",
    "Write a letter from a retired pirate.",
    "Tell the myth of the moon's vacation.",
)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(extra: list[str], env: dict[str, str], model: Path, log: Path) -> tuple[Any, str]:
    port = _port()
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        "m",
        "--port",
        str(port),
        "--max-model-len",
        "2048",
        *extra,
    ]
    proc = subprocess.Popen(
        cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    return proc, f"http://127.0.0.1:{port}"


def _wait(proc: Any, url: str, log: Path) -> None:
    import httpx

    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(1)
    raise RuntimeError("server did not start")


def _arm(
    name: str,
    extra: list[str],
    env: dict[str, str],
    model: Path,
    key: int,
    xargs: dict[str, Any],
    tmp: Path,
) -> dict[str, Any]:
    import httpx

    from detector.evidence.detection import detect_ids

    proc, url = _serve(extra, env, model, tmp / f"{name}.log")
    try:
        _wait(proc, url, tmp / f"{name}.log")
        results = []
        for prompt in PROMPTS:
            body = {
                "model": "m",
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": 200,
                "ignore_eos": True,
                "return_token_ids": True,
                "vllm_xargs": xargs,
            }
            ids = httpx.post(url + "/v1/chat/completions", json=body, timeout=300).json()[
                "choices"
            ][0]["token_ids"]
            results.append(
                {
                    "tokens": len(ids),
                    "p_value": detect_ids(ids, key).p_value,
                    "p_value_wrong_key": detect_ids(ids, key ^ 1).p_value,
                }
            )
        return {"arm": name, "detected": all(r["p_value"] < 1e-6 for r in results), "runs": results}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--model", default=None, help="model directory (default: embedded SmolLM2)")
    args = parser.parse_args()
    import vllm

    from generator.models import resolve_model

    model = resolve_model(args.model)
    tmp = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    key = secrets.randbits(64)  # throwaway: upstream's arm passes it on the command line
    keys = tmp / "keys.json"
    keys.write_text(json.dumps({"gpu-check": {"key": key}}))
    env = dict(
        os.environ,
        PROVENANCE_KEYS_FILE=str(keys),
        VLLM_USE_V2_MODEL_RUNNER="1",
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    ours = _arm(
        "ours-v2-processor",
        ["--logits-processors", "generator.vllm_v2:WatermarkLogitsProcessorV2"],
        env,
        model,
        key,
        {"watermark_key": "gpu-check"},
        tmp,
    )
    upstream = _arm(
        "upstream-watermark-config",
        ["--watermark-config", json.dumps({"algorithm": "gumbel", "key": key})],
        env,
        model,
        key,
        {},
        tmp,
    )
    record = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "vllm": vllm.__version__,
        "model": model.name,
        "arms": [ours, upstream],
    }
    print(json.dumps(record, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=2))
    return 0 if ours["detected"] and upstream["detected"] else 1


if __name__ == "__main__":
    sys.exit(main())
