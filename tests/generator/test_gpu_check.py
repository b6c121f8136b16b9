"""The GPU check's arm (generator/gpu_check.py), driven against a stand-in OpenAI server: the
record says "detected" only when every completion carries the key, and the wrong key's
p-values are kept beside. The real run needs CUDA and vLLM >= 0.33 (``python -m
generator.gpu_check``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from generator import gpu_check
from tests.detector.planted import watermark_ids

KEY = 0x5EC12E7A11CE0001


class _Server(ThreadingHTTPServer):
    marked = True
    bodies: list[dict]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        seed = len(self.server.bodies)
        ids = (
            watermark_ids(KEY, body["max_tokens"], seed)
            if self.server.marked
            else np.random.default_rng(seed).integers(0, 49152, body["max_tokens"])
        )
        answer = json.dumps({"choices": [{"token_ids": [int(i) for i in ids]}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@pytest.fixture
def served(monkeypatch):
    server = _Server(("127.0.0.1", 0), _Handler)
    server.bodies = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started: list[subprocess.Popen] = []

    def serve(extra, env, model, log):
        log.write_text("")
        # The arm stops its server's process group: a real child in a session of its own.
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
        started.append(proc)
        return proc, f"http://127.0.0.1:{server.server_address[1]}"

    monkeypatch.setattr(gpu_check, "_serve", serve)
    yield server
    server.shutdown()
    for proc in started:
        assert proc.poll() is not None  # the arm stopped it


def test_an_arm_whose_completions_carry_the_key_is_detected(served, tmp_path):
    record = gpu_check._arm("ours", [], {}, tmp_path, KEY, {"watermark_key": "k"}, tmp_path)
    assert record["arm"] == "ours" and record["detected"] is True
    assert len(record["runs"]) == len(gpu_check.PROMPTS)
    for run in record["runs"]:
        assert run["tokens"] == 200 and run["p_value"] < 1e-6
        assert run["p_value_wrong_key"] > 1e-4
    assert {b["vllm_xargs"]["watermark_key"] for b in served.bodies} == {"k"}
    assert [b["messages"][0]["content"] for b in served.bodies] == list(gpu_check.PROMPTS)


def test_an_arm_whose_completions_lack_the_key_is_not_detected(served, tmp_path):
    served.marked = False
    record = gpu_check._arm("upstream", [], {}, tmp_path, KEY, {}, tmp_path)
    assert record["detected"] is False
    assert all(run["p_value"] > 1e-4 for run in record["runs"])
