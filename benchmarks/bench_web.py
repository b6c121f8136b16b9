"""Web product benchmark: a real gunicorn web server, Redis and one Celery worker (solo).

1. Latency of a 1,000-token check through the API and the worker (POST, then poll GET until
   done), on the embedded default (SmolLM2 tokenizer, one key): p50 / p95 (target p95 <= 300 ms).
2. Throughput of a 10,000-text audit (POST to done) against in-process ``detect_text`` on the
   same texts and key, measured side by side in this run (target ratio >= 0.8).

Run: ``python benchmarks/bench_web.py`` (``--checks N --texts N`` for a quicker run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _env(tmp: Path, redis_url: str) -> dict[str, str]:
    from cryptography.fernet import Fernet

    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "REDIS_URL": redis_url,
        "PROVENANCE_KEK": Fernet.generate_key().decode(),
        "PROVENANCE_USER_THROTTLE": "100000/min",
        "PROVENANCE_DETECT_THROTTLE": "100000/min",
        "OMP_NUM_THREADS": "1",
        "PROVENANCE_LOG_LEVEL": "WARNING",
    }
    shared = [
        "DATABASE_URL",
        "REDIS_URL",
        "PROVENANCE_KEK",
        "PROVENANCE_USER_THROTTLE",
        "PROVENANCE_DETECT_THROTTLE",
        "PROVENANCE_LOG_LEVEL",
    ]
    os.environ.update({name: env[name] for name in shared})  # this process sets up the DB
    return env


def _setup_db(key_value: int) -> str:
    """Migrate, create a team, user, token and key; returns the API token."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from knox.models import AuthToken

    from provenance.accounts.services import team_create, user_create
    from provenance.keys.services import key_create, tokenizer_default

    call_command("migrate", verbosity=0)
    team = team_create(name="bench")
    user = user_create(username="bench", password="bench-pass-123", team=team)
    key_create(name="bench-key", team=team, tokenizer=tokenizer_default(), value=key_value)
    return AuthToken.objects.create(user=user)[1]


def _texts(key_value: int, count: int) -> tuple[str, list[str]]:
    """A 1,000-token watermarked text, and `count` audit texts (windows of 40-200 words
    from watermarked and human prose, so the audit mixes both)."""
    from detector.text.tokenizers import load_tokenizer
    from tests.provenance.watermark import HUMAN_TEXT, watermarked_ids

    tokenizer = load_tokenizer("default")
    ids = watermarked_ids(key_value, 1000, seed=3)
    long_text = tokenizer.decode(ids)
    words = long_text.split()
    human = (HUMAN_TEXT + " ") * 30
    human_words = human.split()
    rng = np.random.default_rng(0)
    texts = []
    for i in range(count):
        pool = words if i % 2 == 0 else human_words
        n = int(rng.integers(40, 200))
        start = int(rng.integers(0, len(pool) - n))
        texts.append(" ".join(pool[start : start + n]))
    return long_text, texts


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its live descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / tick
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    return total + sum(_cpu_seconds(int(child)) for child in children)


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def _wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (httpx.HTTPError, OSError):
            pass
        time.sleep(0.01)
    raise RuntimeError(f"timed out waiting for {what}")


def _one_check(client: httpx.Client, text: str) -> tuple[float, float]:
    start = time.perf_counter()
    check = client.post("/api/v1/checks", json={"text": text}).json()
    while check["status"] not in ("done", "failed"):
        time.sleep(0.005)
        check = client.get(f"/api/v1/checks/{check['id']}").json()
    if check["status"] != "done":
        raise RuntimeError(check["failure_reason"])
    return (time.perf_counter() - start) * 1000.0, check["scoring_ms"]


def bench_latency(client: httpx.Client, text: str, n: int) -> None:
    for _ in range(5):  # warm: tokenizer loaded, connections open
        _one_check(client, text)
    runs = [_one_check(client, text) for _ in range(n)]
    wall = np.asarray([r[0] for r in runs])
    scoring = np.asarray([r[1] for r in runs])
    print(f"check latency, 1,000-token text, {n} checks through API + worker (warm):")
    print(
        f"  end to end p50 {np.percentile(wall, 50):.1f} ms, p95 {np.percentile(wall, 95):.1f} ms"
        f" (target p95 <= 300 ms)"
    )
    print(f"  of which scoring in the worker: p50 {statistics.median(scoring):.1f} ms")


def bench_audit(client: httpx.Client, texts: list[str], key_value: int, pids: list[int]) -> None:
    from detector.decision.text import detect_text
    from detector.text.tokenizers import load_tokenizer

    tokenizer = load_tokenizer("default")

    def in_process() -> tuple[float, float, int]:
        wall, cpu = time.perf_counter(), time.process_time()
        flagged = sum(detect_text(t, tokenizer, [key_value]).is_watermarked for t in texts)
        return time.perf_counter() - wall, time.process_time() - cpu, flagged

    # The machine is shared: time the in-process loop before and after the audit, average.
    before, cpu_before, flagged = in_process()
    cpu_start = [_cpu_seconds(pid) for pid in pids]
    start = time.perf_counter()
    items = [{"client_id": str(i), "text": t} for i, t in enumerate(texts)]
    audit = client.post("/api/v1/audits", json={"texts": items}, timeout=600).json()
    submitted = time.perf_counter() - start
    while audit["status"] != "done":
        time.sleep(0.2)
        audit = client.get(f"/api/v1/audits/{audit['id']}").json()
    through_api = time.perf_counter() - start
    cpu_each = [_cpu_seconds(pid) - start for pid, start in zip(pids, cpu_start, strict=True)]
    service_cpu = sum(cpu_each)
    after, cpu_after, _ = in_process()
    wall_in, cpu_in = (before + after) / 2, (cpu_before + cpu_after) / 2
    n = len(texts)
    print(
        f"audit of {n:,} texts (one key; {flagged:,} flagged in process, "
        f"{audit['counts']['watermarked']:,} by the audit):"
    )
    print(
        f"  in-process detect_text: {wall_in:.2f} s wall ({n / wall_in:,.0f} texts/s;"
        f" {before:.2f} / {after:.2f} s before / after), {cpu_in:.2f} s CPU"
    )
    print(
        f"  API + one worker:       {through_api:.2f} s wall ({n / through_api:,.0f} texts/s;"
        f" POST {submitted:.2f} s), {service_cpu:.2f} s CPU: worker {cpu_each[0]:.2f},"
        f" web {cpu_each[1]:.2f} (with the progress polls), Redis {cpu_each[2]:.2f}"
    )
    print(f"  throughput ratio (wall): {wall_in / through_api:.2f} (target >= 0.8)")
    print(f"  cost ratio (CPU, insensitive to other load): {cpu_in / service_cpu:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=100)
    parser.add_argument("--texts", type=int, default=10_000)
    options = parser.parse_args()
    from provenance.runner.redis_server import RedisServer, free_port

    key_value = int.from_bytes(os.urandom(8), "big")
    with tempfile.TemporaryDirectory() as tmp_name, RedisServer(Path(tmp_name) / "redis") as redis:
        tmp = Path(tmp_name)
        env = _env(tmp, redis.url)
        token = _setup_db(key_value)
        long_text, texts = _texts(key_value, options.texts)
        port = free_port()
        py = sys.executable
        children = [
            _start(
                [
                    py,
                    "-m",
                    "celery",
                    "-A",
                    "provenance",
                    "worker",
                    "--pool=solo",
                    "--loglevel=WARNING",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],
                env,
                tmp / "worker.log",
            ),
            _start(
                [
                    py,
                    "-m",
                    "gunicorn",
                    "provenance.wsgi:application",
                    "--bind",
                    f"127.0.0.1:{port}",
                    "--workers",
                    "1",
                    "--threads",
                    "4",
                    "--no-control-socket",
                ],
                env,
                tmp / "web.log",
            ),
        ]
        try:
            base = f"http://127.0.0.1:{port}"
            headers = {"Authorization": f"Token {token}"}
            with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
                _wait_until(lambda: client.get("/api/v1/keys").status_code == 200, 60, "web")
                bench_latency(client, long_text, options.checks)
                bench_audit(
                    client, texts, key_value, [c.pid for c in children] + [redis.process.pid]
                )
        finally:
            for child in children:
                child.terminate()
                child.wait(20)


if __name__ == "__main__":
    main()
