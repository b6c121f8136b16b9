"""The benchmark's texts: SmolLM2-135M on vLLM with the project's processor, generated once
under the vLLM lock and cached in ``$PROVENANCE_DATA_DIR/robustness/generations.json``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_generate import (
    _backend,
    _key_file,
    _requests,
    coding_prompts,
    creative_prompts,
)
from benchmarks.robustness.common import SAMPLINGS, TOKENS


def cache_path() -> Path:
    from detector.paths import data_dir

    return data_dir() / "robustness" / "generations.json"


def _paraphrase_requests(texts: list[str]) -> list[Any]:
    from generator.core import SamplingSettings
    from generator.types import GenerationRequest

    return [
        GenerationRequest(
            messages=(
                {
                    "role": "user",
                    "content": f"Rewrite the following text in your own words:\n\n{t}",
                },
            ),
            max_tokens=TOKENS + 50,
            sampling=SamplingSettings(temperature=0.7, top_p=0.9),
            watermark=False,
        )
        for t in texts
    ]


def generate(
    prompts: int,
    max_cells: int | None = None,
    only: list[str] | None = None,
    paraphrase: bool = True,
) -> dict[str, Any]:
    """Every cell's watermarked and plain generations and the paraphrases (cached per cell).

    ``max_cells`` generates at most that many missing cells and returns, so that a long run can
    hold the vLLM lock in chunks; the cache keeps what is done. ``only`` restricts the run (and
    the cells returned) to the cells so named. Without ``paraphrase`` the cells generated now
    get no paraphrases (an empty list).
    """
    path = cache_path()
    cells: dict[str, Any] = {}
    if path.is_file():
        cached = json.loads(path.read_text())
        if cached.get("prompts") == prompts:
            cells = cached["cells"]
    plan = [
        (kind, items, label, sampling)
        for kind, items in (
            ("creative", creative_prompts(prompts)),
            ("code", coding_prompts(prompts)),
        )
        for label, sampling in SAMPLINGS.items()
        if f"{kind} {label}" not in cells and (only is None or f"{kind} {label}" in only)
    ][:max_cells]
    if plan:
        backend = _backend("vllm", _key_file())
        t0 = time.perf_counter()
        try:
            for kind, items, label, (temperature, top_p) in plan:
                marked = backend.generate(_requests(items, TOKENS, True, temperature, top_p))
                plain = backend.generate(_requests(items, TOKENS, False, temperature, top_p))
                para = (
                    backend.generate(_paraphrase_requests([g.text for g in marked]))
                    if paraphrase
                    else []
                )
                cells[f"{kind} {label}"] = {
                    "marked": [list(g.token_ids) for g in marked],
                    "plain": [list(g.token_ids) for g in plain],
                    "paraphrase": [g.text for g in para],
                }
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"prompts": prompts, "tokens": TOKENS, "cells": cells}))
                print(f"generated {kind} {label}: {time.perf_counter() - t0:.0f}s", flush=True)
        finally:
            backend.close()
    chosen = {k: v for k, v in cells.items() if only is None or k in only}
    return {"prompts": prompts, "tokens": TOKENS, "cells": chosen}
