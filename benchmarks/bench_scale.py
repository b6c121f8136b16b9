"""Audit throughput against the number of worker processes: PostgreSQL (a throwaway server),
Redis, and 1, 2 and 3 solo Celery workers on this machine, each scoring the same audit.

For each worker count an audit of ``--texts`` texts (watermarked and human, 40-120 tokens) is
submitted through the service (as the API does) and timed from submission to "done". Printed:
seconds, texts/s and the speedup over one worker. Workers are processes, so the speedup is
bounded by the cores that are free (``os.cpu_count()`` and the machine's load are printed).

Run: ``python benchmarks/bench_scale.py`` (``--texts 6000 --chunk 250 --workers 1 2 3``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
KEY = 0x5CA1_AB1E_0F_5EED5


def _configure(database_url: str, redis_url: str, kek: str, chunk: int, texts: int) -> dict:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "PROVENANCE_KEK": kek,
        "PROVENANCE_AUDIT_CHUNK": str(chunk),
        "PROVENANCE_MAX_AUDIT_TEXTS": str(texts),
        "PROVENANCE_DAILY_QUOTA": str(100 * texts),
        "PROVENANCE_LOG_LEVEL": "WARNING",
        "OMP_NUM_THREADS": "1",
        "DJANGO_SETTINGS_MODULE": "provenance.settings",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env


def _texts(count: int) -> list[dict[str, str]]:
    from tests.provenance.watermark import HUMAN_TEXT, watermarked_text

    marked = [watermarked_text(KEY, 40 + 10 * i, seed=i) for i in range(8)]
    words = (HUMAN_TEXT + " ") * 2
    return [
        {"client_id": str(i), "text": marked[i % 8] if i % 2 else f"{i} {words[i % 200 :]}"}
        for i in range(count)
    ]


def _start_workers(count: int, env: dict, logs: Path) -> list[subprocess.Popen]:
    workers = []
    for i in range(count):
        log = logs / f"worker-{count}-{i}.log"
        with log.open("wb") as out:
            workers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "provenance", "worker"]
                    + ["-n", f"bench{i}@%h", "--pool=solo", "--loglevel=INFO"]
                    + ["--without-gossip", "--without-mingle", "--without-heartbeat"],
                    cwd=REPO,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    deadline = time.monotonic() + 120
    for i in range(count):
        log = logs / f"worker-{count}-{i}.log"
        while b"ready" not in log.read_bytes():
            if time.monotonic() > deadline:
                raise RuntimeError(log.read_text()[-2000:])
            time.sleep(0.2)
    return workers


def _one_run(user, texts: list, workers: int, env: dict, logs: Path) -> float:
    from provenance.audits.models import Audit
    from provenance.audits.services import audit_submit
    from provenance.runner.processes import stop_process

    started = _start_workers(workers, env, logs)
    time.sleep(2.0)  # tokenizers warm, connections open
    try:
        start = time.perf_counter()
        audit, _ = audit_submit(user=user, texts=texts)
        while Audit.objects.get(id=audit.id).status != "done":
            time.sleep(0.1)
        return time.perf_counter() - start
    finally:
        for worker in started:
            stop_process(worker, timeout=20)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=6000)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    options = parser.parse_args()
    from cryptography.fernet import Fernet

    from provenance.runner.redis_server import RedisServer
    from tests.provenance.postgres_server import PostgresServer

    with tempfile.TemporaryDirectory() as tmp, PostgresServer() as pg:
        with RedisServer(Path(tmp) / "redis") as redis:
            kek = Fernet.generate_key().decode()
            env = _configure(pg.url, redis.url, kek, options.chunk, options.texts)
            from provenance.accounts.services import team_create, user_create
            from provenance.keys.services import key_create, tokenizer_default

            team = team_create(name="bench")
            user = user_create(username="bench", password="bench-pass-123", team=team)
            key_create(name="bench", team=team, tokenizer=tokenizer_default(), value=KEY)
            texts = _texts(options.texts)
            load = os.getloadavg()[0]
            print(
                f"scale: audit of {options.texts} texts (40-120 tokens, chunks of "
                f"{options.chunk}), PostgreSQL + Redis + N solo workers on this machine "
                f"({os.cpu_count()} cores, load {load:.1f} at start)"
            )
            base = None
            for count in options.workers:
                seconds = _one_run(user, texts, count, env, Path(tmp))
                base = base or seconds
                print(
                    f"  {count} worker(s): {seconds:6.1f} s, {options.texts / seconds:7.0f} "
                    f"texts/s, speedup {base / seconds:4.2f}x"
                )
            print(f"  load at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
