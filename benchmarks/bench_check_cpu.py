"""Server CPU of one inline check: ``POST /api/v1/checks?wait=10`` through the whole Django
stack (every middleware, token authentication, the rate limits counted in Redis as under
``make run``, the quota, the writes, the answer), in one process, next to what scoring the
same texts alone costs (``score_text``, the detector's part of the request).

CPU time (``time.process_time``) rather than wall time: on a shared machine it is what
decides how many checks per second the web processes can serve (``bench_load.py`` measures
that end to end: checks/s x CPU per check <= cores). Printed: CPU per request, CPU of the
scoring alone, their ratio, and the database queries of one request.

``--paths inline,queued,audit,public`` (``all``) measures every path a check can take, each
in this one process, web and worker work together: ``inline`` as above; ``queued``: the
submission without ``?wait`` (202), the worker's task body run where it is published (the
broker replaced by a direct call), then the client's one read of the verdict; ``audit``:
``POST /api/v1/audits`` of ``--audit-texts`` texts, its chunks scored where published, the
audit's status read once (CPU per text); ``public``: an anonymous public verification
(``GET`` a challenge, ``POST`` with it solved), the client's proof of work measured apart.

Run: ``python benchmarks/bench_check_cpu.py`` (``--checks 300``; ``--database postgresql``
against a throwaway server; ``--profile`` adds the functions that cost the most, of the
first path named; ``--profile-out FILE`` keeps them for ``pstats``).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
KEY_VALUE = 0x5EED_0F_10AD_BE_5C


def _environment(tmp: Path, redis_url: str, database_url: str) -> None:
    for name in ("DATABASE_URL", "PROVENANCE_KEK", "PROVENANCE_CACHE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        {
            "PROVENANCE_DATA_DIR": str(tmp),
            "REDIS_URL": redis_url,
            "PROVENANCE_CACHE_URL": redis_url,  # the rate limits count in Redis, as make run's
            "PROVENANCE_DETECT_THROTTLE": "1000000/min",
            "PROVENANCE_USER_THROTTLE": "1000000/min",
            "PROVENANCE_DAILY_QUOTA": "100000000",
            "PROVENANCE_PUBLIC_ADDRESS_PER_MIN": "1000000",
            "PROVENANCE_PUBLIC_GLOBAL_PER_MIN": "1000000",
            "PROVENANCE_PUBLIC_MAX_VARIANTS": "1000000",
            "PROVENANCE_LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "provenance.settings",
            "OMP_NUM_THREADS": "1",
        }
    )
    if database_url:
        os.environ["DATABASE_URL"] = database_url


def _setup() -> tuple[str, list[str]]:
    """Migrate; a team, a user with an API token, a key; returns the token and the texts."""
    import django

    django.setup()
    from django.core.management import call_command
    from knox.models import AuthToken

    from detector.text.tokenizers import load_tokenizer
    from provenance.accounts.services import team_create, user_create
    from provenance.keys.services import key_create, tokenizer_default
    from tests.provenance.watermark import HUMAN_TEXT, watermarked_ids

    call_command("migrate", verbosity=0)
    team = team_create(name="bench")
    user = user_create(username="bench", password="bench-pass-123", team=team)
    key_create(name="bench-key", team=team, tokenizer=tokenizer_default(), value=KEY_VALUE)
    tokenizer = load_tokenizer("default")
    words = ((HUMAN_TEXT + " ") * 10).split()
    texts = []
    for i in range(8):  # 100-300 tokens, half watermarked: bench_load.py's mix
        n = 100 + 20 * i % 200
        texts.append(tokenizer.decode(watermarked_ids(KEY_VALUE, n, seed=i)))
        texts.append(" ".join(words[i * 7 : i * 7 + n // 2]))
    return AuthToken.objects.create(user=user)[1], texts


def _cpu_ms(run: Callable[[int], None], count: int) -> float:
    start = time.process_time()
    for i in range(count):
        run(i)
    return (time.process_time() - start) * 1000 / count


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=300)
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--profile-sort", default="cumulative", help="pstats order: cumulative, tottime, ..."
    )
    parser.add_argument("--profile-out", default="", help="also dump the profile to this file")
    parser.add_argument(
        "--paths", default="inline", help="inline, queued, audit, public (comma-separated) or all"
    )
    parser.add_argument("--audit-texts", type=int, default=50)
    options = parser.parse_args()
    from provenance.runner.redis_server import RedisServer
    from tests.provenance.postgres_server import PostgresServer

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        redis = stack.enter_context(RedisServer(tmp / "redis"))
        url = stack.enter_context(PostgresServer()).url if options.database == "postgresql" else ""
        _environment(tmp, redis.url, url)
        token, texts = _setup()
        paths = PATHS if options.paths == "all" else options.paths.split(",")
        if paths == ["inline"]:
            _measure(options, token, texts)
        else:
            measure_paths(options, token, texts, paths)
    return 0


def _measure(options: argparse.Namespace, token: str, texts: list[str]) -> None:
    from django.conf import settings
    from django.db import connection
    from django.test import Client

    from provenance.keys.models import WatermarkKey
    from provenance.keys.selectors import prepare_keys
    from provenance.scoring.service import score_text

    client = Client(HTTP_AUTHORIZATION=f"Token {token}")

    def post(i: int) -> None:
        answer = client.post(
            "/api/v1/checks?wait=10", {"text": texts[i % len(texts)]}, "application/json"
        )
        assert answer.status_code == 201, answer.content[:300]

    groups = prepare_keys(list(WatermarkKey.objects.select_related("tokenizer")))

    def score(i: int) -> None:
        score_text(texts[i % len(texts)], groups, threshold=settings.PROVENANCE_THRESHOLD)

    for i in range(20):  # warm: tokenizer, connections, the n-gram table
        post(i)
        score(i)
    statements: list[str] = []

    def count(run: Any, sql: str, *args: Any) -> Any:
        statements.append(sql)
        return run(sql, *args)

    with connection.execute_wrapper(count):
        post(0)
    request_ms = _cpu_ms(post, options.checks)
    scoring_ms = _cpu_ms(score, options.checks)
    print(
        f"inline check CPU ({options.database}, {options.checks} checks of 100-300 tokens, "
        f"one process, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    print(f"  POST /api/v1/checks?wait=10: {request_ms:6.2f} ms per check")
    print(f"  score_text alone:            {scoring_ms:6.2f} ms per check")
    print(
        f"  request / scoring: {request_ms / scoring_ms:.2f}x; the rest of the request "
        f"{request_ms - scoring_ms:.2f} ms; {len(statements)} SQL statements"
    )
    if options.profile:
        profile = cProfile.Profile(time.process_time)  # CPU, not waits
        profile.runcall(_cpu_ms, post, options.checks)
        if options.profile_out:
            profile.dump_stats(options.profile_out)
        pstats.Stats(profile).sort_stats(options.profile_sort).print_stats(40)


PATHS = ["inline", "queued", "audit", "public"]


def _tasks_in_process() -> None:
    """Every task published is run here, at once, by its own code (``Task.apply``): the
    worker's work lands in this process's CPU time as the broker's delivery would not."""
    from provenance.celery import app
    from provenance.checks import queue

    app.loader.import_default_modules()

    def publish(task_name: str, *args: Any) -> bool:
        app.tasks[task_name].apply(args=list(args), throw=True)
        return True

    queue.publish = publish  # type: ignore[assignment]


def measure_paths(
    options: argparse.Namespace, token: str, texts: list[str], paths: list[str]
) -> dict[str, float]:
    """CPU (ms) per check of each path, web and worker together, next to ``score_text``."""
    from django.conf import settings
    from django.test import Client

    from provenance.keys.models import WatermarkKey
    from provenance.keys.selectors import prepare_keys
    from provenance.keys.services import key_publish
    from provenance.scoring.service import score_text

    _tasks_in_process()
    settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER = 2_000  # the client's share; measured apart
    key_publish(key=WatermarkKey.objects.get(), public_name="Bench Model")
    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    anonymous = Client()
    groups = prepare_keys(list(WatermarkKey.objects.select_related("tokenizer")))
    solve_ms: list[float] = []

    def inline(i: int) -> None:
        answer = client.post(
            "/api/v1/checks?wait=10", {"text": texts[i % len(texts)]}, "application/json"
        )
        assert answer.status_code == 201, answer.content[:300]

    def queued(i: int) -> None:
        answer = client.post("/api/v1/checks", {"text": texts[i % len(texts)]}, "application/json")
        # 202 as a client sees it; here the task ran before the answer was read back: 201.
        assert answer.status_code in (201, 202), answer.content[:300]
        read = client.get(f"/api/v1/checks/{answer.json()['id']}")
        assert read.json()["status"] == "done", read.content[:300]

    batch = [
        {"client_id": str(n), "text": texts[n % len(texts)]} for n in range(options.audit_texts)
    ]

    def audit(i: int) -> None:
        answer = client.post("/api/v1/audits", {"texts": batch}, "application/json")
        assert answer.status_code in (201, 202), answer.content[:300]
        read = client.get(f"/api/v1/audits/{answer.json()['id']}")
        assert read.json()["status"] == "done", read.content[:300]

    def public(i: int) -> None:
        challenge = anonymous.get("/api/public/v1/challenge").json()
        start = time.process_time()
        proof = solve_pow(challenge)
        solve_ms.append((time.process_time() - start) * 1000)
        answer = anonymous.post(
            "/api/public/v1/verify",
            {"text": texts[i % len(texts)]},
            "application/json",
            HTTP_X_PROVENANCE_POW=proof,
        )
        assert answer.status_code == 200, answer.content[:300]

    def score(i: int) -> None:
        score_text(texts[i % len(texts)], groups, threshold=settings.PROVENANCE_THRESHOLD)

    runs = {"inline": inline, "queued": queued, "audit": audit, "public": public}
    audits = max(2, options.checks // options.audit_texts)
    for i in range(10):
        score(i)
    scoring_ms = _cpu_ms(score, options.checks)
    print(
        f"CPU per check of each path ({options.database}, texts of 100-300 tokens, one process: "
        f"web and worker work together, load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores); score_text alone {scoring_ms:.2f} ms"
    )
    figures = {"scoring": scoring_ms}
    for path in paths:
        run = runs[path]
        count = audits if path == "audit" else options.checks
        for i in range(3):  # warm
            run(i)
        solve_ms.clear()
        # Not the public path's proof of work: the client's (time taken apart, subtracted).
        total = _cpu_ms(run, count) * count
        per = (total - sum(solve_ms)) / (count * options.audit_texts if path == "audit" else count)
        figures[path] = per
        note = f"; the client's proof of work {np.mean(solve_ms):.1f} ms" if solve_ms else ""
        unit = "text" if path == "audit" else "check"
        print(f"  {path:7s} {per:6.2f} ms per {unit}, {per / scoring_ms:5.2f}x scoring{note}")
    if options.profile:
        run = runs[paths[0]]
        profile = cProfile.Profile(time.process_time)
        profile.runcall(_cpu_ms, run, audits if paths[0] == "audit" else options.checks)
        if options.profile_out:
            profile.dump_stats(options.profile_out)
        pstats.Stats(profile).sort_stats(options.profile_sort).print_stats(40)
    return figures


def solve_pow(challenge: dict[str, Any]) -> str:
    """A solved ALTCHA challenge, as the page sends it (base64 JSON): the client's work."""
    import altcha

    made = altcha.ChallengeV1(
        challenge["algorithm"],
        challenge["challenge"],
        challenge["maxNumber"],
        challenge["salt"],
        challenge["signature"],
    )
    found = altcha.solve_challenge_v1(made)
    assert found is not None
    return str(
        altcha.PayloadV1(
            made.algorithm, made.challenge, found.number, made.salt, made.signature
        ).to_base64()
    )


if __name__ == "__main__":
    sys.exit(main())
