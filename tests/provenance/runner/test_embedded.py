"""`make run` end to end: a fresh data directory, the embedded Redis, one worker, the web
server, the demo login; a pasted watermarked text gets its verdict; Ctrl-C stops everything."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from provenance.runner.redis_server import free_port
from tests.provenance.public.conftest import solve
from tests.provenance.watermark import watermarked_text
from tests.waiting import wait_until

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
DEMO_KEY = 0x0123456789ABCDEF


def _port_open(port: int) -> bool:
    try:
        httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
        return True
    except httpx.HTTPError:
        return False


def test_make_run_serves_the_product_and_stops_cleanly(tmp_path):
    port = free_port()
    data_dir = tmp_path / "data"  # created by the runner, as on a first `make run`
    env = {
        **os.environ,
        "PROVENANCE_DATA_DIR": str(data_dir),
        "PROVENANCE_PORT": str(port),
        "PROVENANCE_DEMO_KEY": str(DEMO_KEY),
        "OMP_NUM_THREADS": "1",
        # No playground generator here (converting the model into this fresh data dir costs
        # minutes): an external URL makes the runner start none. test_playground_generator
        # starts the embedded generator the way the runner does.
        "PROVENANCE_GENERATOR_URL": f"http://127.0.0.1:{free_port()}",
    }
    for name in ("DATABASE_URL", "REDIS_URL", "PROVENANCE_KEK", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "provenance.runner.embedded"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    try:
        password = _wait_for_login(lines, proc)
        assert str(DEMO_KEY) not in "".join(lines)  # the demo key is never printed
        wait_until(lambda: _port_open(port), 60, 0.2)
        verdict = _paste_and_check(port, password, watermarked_text(DEMO_KEY, 120, seed=9))
        assert verdict == "watermarked"
        _public_check(port, tmp_path)
        # Redis runs without snapshots; an operator's SAVE (or a replica's sync) still
        # writes a dump holding the queue's messages: private as well.
        redis_port = int(re.search(r"Redis \(embedded\) on port (\d+)", "".join(lines)).group(1))
        assert _redis_save(redis_port) == b"+OK"
        while_running = _modes(data_dir)  # the WAL and shared-memory files exist only now
    finally:
        proc.send_signal(signal.SIGINT)
        # A second signal while the runner stops its children (an impatient user): sent
        # once it says it is stopping.
        wait_until(lambda: "stopping" in "".join(lines), 30, alive=lambda: proc.poll() is None)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0
    assert _processes_with_data_dir(data_dir) == []  # no child outlived the runner
    assert not _port_open(port)
    assert not _port_open(redis_port)
    assert (data_dir / "provenance.sqlite3").exists() and (data_dir / "kek.key").exists()
    assert str(DEMO_KEY) not in "".join(lines)
    _assert_private(while_running | _modes(data_dir))


def _public_check(port: int, tmp_path: Path) -> None:
    """`make run` publishes its demo key: the discovery document names it, an anonymous check
    without a proof of work gets a challenge and no verdict, and with one a watermarked text
    answers "watermarked" with a receipt that `python -m detector verify` accepts offline."""
    from detector.cli.main import main

    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        discovery = client.get("/.well-known/provenance.json").json()
        assert [model["name"] for model in discovery["models"]] == ["SmolLM2 demo"]
        assert client.get("/verify/").status_code == 200
        text = watermarked_text(DEMO_KEY, 120, seed=11)
        refused = client.post("/api/public/v1/verify", json={"text": text})
        assert refused.status_code == 403 and "verdict" not in refused.json()
        proof = solve(refused.json()["challenge"])
        answer = client.post(
            "/api/public/v1/verify", json={"text": text}, headers={"X-Provenance-Pow": proof}
        ).json()
        assert (answer["verdict"], answer["model"]) == ("watermarked", "SmolLM2 demo")
        (tmp_path / "jwks.json").write_bytes(client.get(discovery["jwks_uri"]).content)
    (tmp_path / "receipt.jws").write_text(answer["receipt"])
    (tmp_path / "text.txt").write_bytes(text.encode())
    args = ["verify", str(tmp_path / "receipt.jws"), "--jwks", str(tmp_path / "jwks.json")]
    assert main([*args, "--text", str(tmp_path / "text.txt")]) == 0


def _modes(data_dir: Path) -> dict[str, int]:
    """Permission bits of the data directory and of everything under it."""
    paths = [data_dir, *data_dir.rglob("*")]
    return {str(path.relative_to(data_dir.parent)): path.lstat().st_mode for path in paths}


def _assert_private(modes: dict[str, int]) -> None:
    """Directories 0700, files 0600: submitted texts, keys and logs are the owner's alone."""
    names = set(modes)
    private = ["provenance.sqlite3", "provenance.sqlite3-wal", "kek.key", "secret.key"]
    for wanted in [*private, "demo-login.txt"]:
        assert f"data/{wanted}" in names, sorted(names)
    assert {"data/redis/redis.log", "data/redis/dump.rdb", "data/logs/web.log"} <= names, names
    wrong = {
        name: oct(stat.S_IMODE(mode))
        for name, mode in modes.items()
        if stat.S_IMODE(mode) != (0o700 if stat.S_ISDIR(mode) else 0o600)
    }
    assert wrong == {}


def _redis_save(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"SAVE\r\n")
        return sock.recv(64).strip()


def _processes_with_data_dir(data_dir: Path) -> list[str]:
    """Command lines of the live processes started with this data directory."""
    mark = f"PROVENANCE_DATA_DIR={data_dir}".encode()
    found = []
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            if mark in (proc_dir / "environ").read_bytes().split(b"\0"):
                found.append((proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _wait_for_login(lines: list[str], proc: subprocess.Popen) -> str:
    found = wait_until(
        lambda: re.search(r"with password '([^']+)'", "".join(lines)),
        180,
        0.2,
        alive=lambda: proc.poll() is None,
        what=lambda: "no login printed:\n" + "".join(lines)[-3000:],
    )
    return found.group(1)


def _csrf(client: httpx.Client, url: str) -> str:
    page = client.get(url).text
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def _paste_and_check(port: int, password: str, text: str) -> str:
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, follow_redirects=True, timeout=30) as client:
        token = _csrf(client, "/accounts/login/")
        client.post(
            "/accounts/login/",
            data={
                "username": "demo",
                "password": password,
                "csrfmiddlewaretoken": token,
            },
        )
        token = _csrf(client, "/")
        response = client.post("/", data={"text": text, "csrfmiddlewaretoken": token})
        url = str(response.url)
        assert "/checks/" in url, response.text[:500]
        found = wait_until(
            lambda: re.search(r'data-verdict="([a-z-]+)"', client.get(url).text), 60, 0.2
        )
        return found.group(1)


def test_a_taken_port_is_named_before_anything_starts(tmp_path):
    """Another program on the port: the runner says which port and how to choose another,
    at once, instead of starting everything and crash-looping its web on the bind."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PROVENANCE_DATA_DIR": str(tmp_path / "data")}
        env.update(PROVENANCE_PORT=str(port), PROVENANCE_HOST="127.0.0.1", OMP_NUM_THREADS="1")
        for name in ("DATABASE_URL", "REDIS_URL", "PROVENANCE_KEK", "DJANGO_SETTINGS_MODULE"):
            env.pop(name, None)
        runner = subprocess.Popen(
            [sys.executable, "-m", "provenance.runner.embedded"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            said, _ = runner.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # still running: stopped the way a user would
            runner.send_signal(signal.SIGINT)
            said = runner.communicate(timeout=60)[0]
    assert runner.returncode == 1, said
    assert f"port {port} on 127.0.0.1 is already in use" in said, said
    suggested = re.search(r"PROVENANCE_PORT=(\d+) make run", said)
    assert suggested and int(suggested[1]) != port, said
    assert "web exited" not in said and not (tmp_path / "data" / "redis").exists()
