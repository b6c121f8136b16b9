from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from detector.evidence.detection import detect_ids

ROOT = Path(__file__).resolve().parents[2]
KEY = 0x1111222233334444


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "generator", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def keys(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"audit": {"key": KEY, "algorithm": "gumbel", "context_width": 4}}))
    return path


@pytest.mark.slow
def test_generate_prints_text_token_ids_and_provenance(keys):
    r = _run(
        "generate",
        "--backend",
        "transformers",
        "--keys",
        str(keys),
        "--key",
        "audit",
        "--prompt",
        "Write a story about a robot.",
        "--chat",
        "--max-tokens",
        "60",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["key"] == "audit" and out["watermarked"] and out["text"]
    assert detect_ids(out["token_ids"], KEY).p_value < 0.01
    assert str(KEY) not in r.stdout + r.stderr


def test_an_unknown_key_name_fails_with_a_message(keys):
    r = _run("generate", "--keys", str(keys), "--key", "nobody", "--prompt", "hi")
    assert r.returncode == 2 and "nobody" in r.stderr and str(KEY) not in r.stderr


def test_a_missing_key_file_fails_with_a_message(tmp_path):
    r = _run("generate", "--keys", str(tmp_path / "none.json"), "--key", "a", "--prompt", "hi")
    assert r.returncode == 2 and "cannot read key file" in r.stderr
