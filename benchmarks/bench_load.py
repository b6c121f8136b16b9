"""Load benchmark: concurrent API clients against the embedded default (``make run``: SQLite,
the embedded Redis, one solo Celery worker, gunicorn), on loopback.

Each client submits a check (``POST /api/v1/checks?wait=10``: the server answers with the
verdict; ``--wait 0``: submit, then poll until done), and starts the next, for DURATION
seconds or until the request budget is spent. Texts alternate between watermarked (under the
demo key, set through PROVENANCE_DEMO_KEY) and human prose, 100-300 tokens each. Printed:
checks/s, p50/p95 of the submit latency and of submit-to-verdict, the CPU seconds per check
of each server component (web, worker, Redis, PostgreSQL, the runner) and of the clients,
read from /proc (steadier than wall time on a shared machine), and the error count, which
must be 0 (any non-2xx answer, a failed check, or a wrong verdict).

The per-user detection rate limit and daily quota are raised for the run (at the defaults
most requests would be 429 by design).

``--path`` names what each client does (``all``, the default, runs every one in turn):

- ``inline``: ``POST /api/v1/checks?wait=10``, scored in the request;
- ``queued``: the same against a runner started with ``PROVENANCE_INLINE_MAX_BYTES=0``: every
  check goes through the broker to the worker while the request waits (the documented way to
  wait; a client over the waiting cap is answered 202 and polls);
- ``audit``: ``POST /api/v1/audits`` of ``--audit-texts`` texts, the audit's status read every
  0.2 s until done: texts/s and CPU per text;
- ``public``: anonymous public verification of the demo's published key: a challenge, its
  proof of work solved by the client (its CPU is the client's, printed apart), the verify;
- ``floor`` (not part of ``all``): requests lighter than a check under the same load, two
  alternating rounds of ``health`` (``GET /healthz``, answered by the first middleware:
  gunicorn and Django's handler), ``read`` (``GET /api/v1/checks/<id>`` of one of the
  client's own checks: authentication, the rate limit, one read, the serializer) and
  ``inline``: server CPU per request, what any check costs before it is scored and stored.

``--users 8`` (the default): each client is a user of its own (the demo team's); ``--users 1``:
every client is the demo user (the waiting cap then sends all but 2 waiting checks to the
polling path). Beside each path's server CPU per check: the CPU of scoring the same texts in
this process (``score_text``; ``score_texts`` for audits), and their ratio.

Run: ``python benchmarks/bench_load.py`` (``--clients 8 --users 8 --seconds 30 --max-requests
20000 --wait 10 --path all``): SQLite (the embedded default), then the same against a
throwaway PostgreSQL server; ``--database sqlite`` or ``postgresql`` runs one of them.
``--quick``: every path in one process instead (``bench_check_cpu.py --paths all``, web and
worker work together), a few seconds of measuring: ``make bench-quick``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEMO_KEY = 0x5EED_0F_10AD_BE_5C


@dataclass
class Tally:
    submit_ms: list[float] = field(default_factory=list)
    verdict_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> bool:
        """One request from the shared budget; False when it is spent."""
        with self.lock:
            self.requests += 1
            return self.requests <= self.budget

    budget: int = 0
    wait: float = 0.0  # ?wait= of each submission; 0: submit, then poll
    path: str = "inline"
    texts_done: int = 0  # audits: texts finished
    solve_cpu: float = 0.0  # public: the clients' proof of work (CPU seconds)
    audit_texts: int = 20
    read_ids: list[str] = field(default_factory=list)  # read: each client's check


def _texts() -> list[tuple[str, bool]]:
    from detector.text.tokenizers import load_tokenizer
    from tests.provenance.watermark import HUMAN_TEXT, watermarked_ids

    tokenizer = load_tokenizer("default")
    human = (HUMAN_TEXT + " ") * 10
    words = human.split()
    texts = []
    for i in range(16):
        n = 100 + 20 * i % 200
        texts.append((tokenizer.decode(watermarked_ids(DEMO_KEY, n, seed=i)), True))
        texts.append((" ".join(words[i * 7 : i * 7 + n // 2]), False))
    return texts


def _login_token(base: str, password: str) -> str:
    """As a user would: log in, create an API token on its page, read it once."""
    with httpx.Client(base_url=base, follow_redirects=True, timeout=30) as web:
        csrf = _csrf(web.get("/accounts/login/").text)
        web.post(
            "/accounts/login/",
            data={"username": "demo", "password": password, "csrfmiddlewaretoken": csrf},
        )
        page = web.post(
            "/accounts/token/",
            data={"csrfmiddlewaretoken": _csrf(web.get("/accounts/token/").text)},
        ).text
    return re.search(r'<code id="api-token">([0-9a-f]+)</code>', page).group(1)


def _csrf(page: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def _client_loop(
    base: str, token: str, texts: list[tuple[str, bool]], tally: Tally, stop_at: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    headers = {} if tally.path == "public" else {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as api:
        while time.monotonic() < stop_at and tally.take():
            text, expected = texts[int(rng.integers(len(texts)))]
            try:
                if tally.path == "audit":
                    _audit(api, texts, rng, tally)
                elif tally.path == "public":
                    _public(api, text, expected, tally)
                elif tally.path in FLOOR:
                    _light(api, tally, seed)
                else:
                    _one(api, text, expected, tally, stop_at)
            except (httpx.HTTPError, KeyError, ValueError) as exc:
                tally.errors.append(f"{type(exc).__name__}: {exc}")


def _audit(api: httpx.Client, texts: list[tuple[str, bool]], rng: Any, tally: Tally) -> None:
    start = time.perf_counter()
    chosen = [texts[int(rng.integers(len(texts)))] for _ in range(tally.audit_texts)]
    body = {"texts": [{"client_id": str(n), "text": t} for n, (t, _) in enumerate(chosen)]}
    answer = api.post("/api/v1/audits", json=body)
    if answer.status_code not in (201, 202):
        tally.errors.append(f"POST audit {answer.status_code}: {answer.text[:200]}")
        return
    submitted = time.perf_counter()
    audit = answer.json()
    while audit["status"] not in ("done", "failed"):
        time.sleep(0.2)
        tally.take()
        audit = api.get(f"/api/v1/audits/{audit['id']}").json()
    if audit["status"] != "done":
        tally.errors.append(f"audit {audit['status']}")
        return
    with tally.lock:
        tally.texts_done += len(chosen)
    tally.submit_ms.append((submitted - start) * 1000)
    tally.verdict_ms.append((time.perf_counter() - start) * 1000)


def _public(api: httpx.Client, text: str, expected: bool, tally: Tally) -> None:
    from benchmarks.bench_check_cpu import solve_pow

    start = time.perf_counter()
    challenge = api.get("/api/public/v1/challenge").json()
    cpu = time.thread_time()
    proof = solve_pow(challenge)
    with tally.lock:
        tally.solve_cpu += time.thread_time() - cpu
    answer = api.post(
        "/api/public/v1/verify", json={"text": text}, headers={"X-Provenance-Pow": proof}
    )
    if answer.status_code != 200:
        tally.errors.append(f"verify {answer.status_code}: {answer.text[:200]}")
        return
    verdict = answer.json()["verdict"]
    if (verdict == "watermarked") is not expected and verdict != "inconclusive":
        tally.errors.append(f"verify answered {verdict}")
        return
    tally.submit_ms.append((time.perf_counter() - start) * 1000)
    tally.verdict_ms.append((time.perf_counter() - start) * 1000)


def _run_clients(
    base: str,
    tokens: list[str],
    texts: list[tuple[str, bool]],
    tally: Tally,
    stop_at: float,
    clients: int,
) -> None:
    """``clients`` threads (client i signed in with ``tokens[i % len(tokens)]``), each
    submitting until ``stop_at`` or the budget is spent."""
    threads = [
        threading.Thread(
            target=_client_loop,
            args=(base, tokens[i % len(tokens)], texts, tally, stop_at, i),
        )
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _light(api: httpx.Client, tally: Tally, client: int) -> None:
    """A request lighter than a check: ``health`` or ``read`` (``FLOOR``)."""
    start = time.perf_counter()
    if tally.path == "health":
        answer = api.get("/healthz")
    else:
        answer = api.get(f"/api/v1/checks/{tally.read_ids[client % len(tally.read_ids)]}")
    if answer.status_code != 200:
        tally.errors.append(f"GET {answer.status_code}: {answer.text[:200]}")
        return
    tally.submit_ms.append((time.perf_counter() - start) * 1000)
    tally.verdict_ms.append(tally.submit_ms[-1])


def _one(api: httpx.Client, text: str, expected: bool, tally: Tally, stop_at: float) -> None:
    start = time.perf_counter()
    answer = api.post(
        "/api/v1/checks", params={"wait": tally.wait} if tally.wait else None, json={"text": text}
    )
    submitted = time.perf_counter()
    if answer.status_code not in (201, 202):
        tally.errors.append(f"POST {answer.status_code}: {answer.text[:200]}")
        return
    check = answer.json()
    while check["status"] in ("pending", "running"):
        time.sleep(0.02)
        tally.take()  # polls count against the request budget too
        polled = api.get(f"/api/v1/checks/{check['id']}")
        if polled.status_code != 200:
            tally.errors.append(f"GET {polled.status_code}")
            return
        check = polled.json()
    if check["status"] != "done" or check["is_watermarked"] is not expected:
        tally.errors.append(f"check {check['status']} {check.get('failure_reason')}")
        return
    tally.submit_ms.append((submitted - start) * 1000)
    tally.verdict_ms.append((time.perf_counter() - start) * 1000)


def _runner_env(tmp: Path, port: int, database_url: str, extra: dict[str, str]) -> dict[str, str]:
    from provenance.runner.redis_server import free_port

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "PROVENANCE_KEK", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        {
            "PROVENANCE_DATA_DIR": str(tmp),
            "PROVENANCE_PORT": str(port),
            "PROVENANCE_DEMO_KEY": str(DEMO_KEY),
            "OMP_NUM_THREADS": "1",
            "PROVENANCE_DETECT_THROTTLE": "1000000/min",
            "PROVENANCE_USER_THROTTLE": "1000000/min",
            "PROVENANCE_DAILY_QUOTA": "100000000",
            "PROVENANCE_PUBLIC_ADDRESS_PER_MIN": "1000000",
            "PROVENANCE_PUBLIC_GLOBAL_PER_MIN": "1000000",
            "PROVENANCE_PUBLIC_MAX_VARIANTS": "1000000",
            # The clients' share of a public check; their CPU is printed apart.
            "PROVENANCE_PUBLIC_POW_MAX_NUMBER": "20000",
            "PROVENANCE_LOG_LEVEL": "WARNING",
            # No playground generator: this measures checks.
            "PROVENANCE_GENERATOR_URL": f"http://127.0.0.1:{free_port()}",
        }
    )
    if database_url:  # the runner migrates and serves whatever DATABASE_URL names
        env["DATABASE_URL"] = database_url
    env.update(extra)
    return env


USERS_SCRIPT = """
import sys, django
django.setup()
from knox.models import AuthToken
from provenance.accounts.models import Team
from provenance.accounts.services import user_create
team = Team.objects.get(name="demo")
for n in range(int(sys.argv[1])):
    user = user_create(username=f"bench{n}", password="bench-pass-123456", team=team)
    print(AuthToken.objects.create(user=user)[1])
"""


def _more_users(env: dict[str, str], count: int) -> list[str]:
    """API tokens of ``count`` more users of the demo team, made beside the running server
    (the same database) as an administrator would."""
    if count <= 0:
        return []
    env = {**env, "DJANGO_SETTINGS_MODULE": "provenance.settings", "PROVENANCE_EMBEDDED": "1"}
    out = subprocess.run(
        [sys.executable, "-c", USERS_SCRIPT, str(count)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()[-count:]


def _start_embedded(env: dict[str, str]) -> tuple[subprocess.Popen[str], str, list[str]]:
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
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        found = re.search(r"with password '([^']+)'", "".join(lines))
        if found:
            return proc, found.group(1), lines
        if proc.poll() is not None:
            raise RuntimeError("".join(lines)[-3000:])
        time.sleep(0.2)
    raise RuntimeError("the embedded default did not start")


def _wait_web(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base}/accounts/login/", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("web server not up")


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> tuple[int, list[int]]:
    """(parent pid, [utime, stime, cutime, cstime] in clock ticks) of a live process."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return int(fields[1]), [int(x) for x in fields[11:15]]


def _component(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmd = handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    for needle, name in (
        ("redis", "redis"),
        ("celery", "worker"),
        ("gunicorn", "web"),
        ("postgres", "postgresql"),
        ("runuser", "postgresql"),
        ("provenance.runner.embedded", "runner"),
    ):
        if needle in cmd:
            return name
    return "other"


def cpu_by_component(roots: list[int]) -> dict[str, float]:
    """CPU seconds (user + system) used so far by the process trees under ``roots``, summed
    per component (web, worker, redis, postgresql, runner): each process's own time plus
    that of its children that exited and were waited for, so a restarted or short-lived
    process still counts. Read from /proc: exact, and cheap enough to take during a run."""
    parents: dict[int, int] = {}
    ticks: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                parents[int(entry)], ticks[int(entry)] = _proc_stat(int(entry))
    totals: dict[str, float] = {}
    for pid in ticks:
        top, node = None, pid
        while node in parents and node not in roots:
            node = parents[node]
        if node not in roots:
            continue
        # The component is named by the first process below the root (or the root itself).
        top = pid
        while parents.get(top) not in roots and top not in roots:
            top = parents[top]
        name = _component(top)
        own = ticks[pid]
        used = own[0] + own[1] + own[2] + own[3]
        if pid == node and name == "runner":
            used = own[0] + own[1]  # its children's time is counted under their own names
        totals[name] = totals.get(name, 0.0) + used / CLOCK_TICKS
    return totals


def _assist_state() -> str:
    """What the runner's workers do with the demo tokenizer's model (PROVENANCE_MODEL_ASSIST,
    read by the product's own rule, ``provenance.env.env_model_assist``): "adaptive" (the
    default) reads a check only where the model-free stage left it undecided, on the worker,
    after the first answer; "auto" reads every check where the workers have a CUDA device;
    off never reads."""
    from detector.core.scoring import cuda_available
    from provenance.env import env_model_assist

    mode = env_model_assist("PROVENANCE_MODEL_ASSIST")
    if mode == "adaptive":
        return "adaptive (undecided checks read by the worker)"
    if mode == "auto":
        return "on (auto, CUDA)" if cuda_available() else "off (auto, no CUDA device)"
    return "off"


def _report(
    tally: Tally,
    seconds: float,
    clients: int,
    database: str,
    cpu: dict[str, float],
    users: int,
    scoring_ms: float,
    busy_seconds: float | None = None,
) -> None:
    """``busy_seconds``: the time the server's CPU was spent over (the window and the
    draining of what it left queued), for the cores-busy figure; the window's by default."""
    done = len(tally.verdict_ms)
    submit, verdict = np.asarray(tally.submit_ms), np.asarray(tally.verdict_ms)
    from provenance.runner.embedded import web_threads, web_workers

    how = f"POST ?wait={tally.wait:g}" if tally.wait else "POST, then poll every 20 ms"
    how = {
        "audit": f"audits of {tally.audit_texts} texts, status read every 0.2 s",
        "public": "anonymous public verification (challenge, proof of work, verify)",
        "queued": f"{how}, every check scored by the worker (PROVENANCE_INLINE_MAX_BYTES=0)",
        "health": "GET /healthz (answered by the first middleware)",
        "read": "GET /api/v1/checks/<id> of the client's own check (nothing scored or written)",
    }.get(tally.path, how)
    counted = "request" if tally.path in FLOOR else "check"  # what ``done`` counts
    unit = "text" if tally.path == "audit" else counted  # what the CPU is given per
    print(
        f"load [{tally.path}]: {clients} concurrent API clients of {users} user(s), "
        f"{seconds:.1f} s, make run's runner on "
        f"{database} (embedded Redis, 1 solo worker, "
        f"gunicorn {web_workers()}x{web_threads()} threads), "
        f"{how}, model assistance {_assist_state()}, loopback, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    sent = min(tally.requests, tally.budget)
    print(
        f"  {counted}s completed: {done} ({done / seconds:.1f} {counted}s/s); "
        f"HTTP requests: {sent} (budget {tally.budget})"
    )
    if done:
        print(
            f"  submit (POST answered):  p50 {np.percentile(submit, 50):6.1f} ms, "
            f"p95 {np.percentile(submit, 95):6.1f} ms"
        )
        print(
            f"  submit -> verdict (done): p50 {np.percentile(verdict, 50):6.1f} ms, "
            f"p95 {np.percentile(verdict, 95):6.1f} ms"
        )
    if tally.path == "audit" and tally.texts_done:
        print(f"  texts scored: {tally.texts_done} ({tally.texts_done / seconds:.1f} texts/s)")
        done = tally.texts_done  # CPU per text below
    if done:
        order = ["web", "worker", "redis", "postgresql", "runner", "other", "client"]
        parts = [f"{name} {cpu[name] / done * 1000:.1f}" for name in order if cpu.get(name)]
        server = sum(v for name, v in cpu.items() if name != "client")
        per = server / done * 1000
        print(
            f"  CPU per {unit} (ms): {', '.join(parts)}; server total {per:.1f} "
            f"({server / (busy_seconds or seconds):.2f} cores busy); scoring the same texts "
            f"in process {scoring_ms:.2f}: server / scoring {per / scoring_ms:.1f}x"
        )
        if tally.solve_cpu:
            print(f"  the clients' proof of work: {tally.solve_cpu / done * 1000:.1f} ms each")
    print(f"  errors: {len(tally.errors)}")
    for error in tally.errors[:10]:
        print(f"    {error}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--max-requests", type=int, default=20_000)
    parser.add_argument(
        "--wait",
        type=float,
        default=10.0,
        help="each submission's ?wait= (seconds): the server answers with the verdict; "
        "0: submit, then poll every 20 ms as clients did before ?wait= existed",
    )
    parser.add_argument("--users", type=int, default=8, help="users the clients sign in as")
    parser.add_argument(
        "--path",
        choices=[*PATHS, *FLOOR, "all", "floor"],
        default="all",
        help="what each client does",
    )
    parser.add_argument("--audit-texts", type=int, default=20)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every path in one process (bench_check_cpu.py --paths all): a few seconds",
    )
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgresql", "both"],
        default="both",
        help="sqlite: the embedded default; postgresql: a throwaway server beside it; "
        "both: one after the other (the default)",
    )
    options = parser.parse_args()
    if options.quick:
        quick = [sys.executable, str(REPO / "benchmarks" / "bench_check_cpu.py")]
        database = "postgresql" if options.database == "postgresql" else "sqlite"
        args = ["--paths", "all", "--checks", "30", "--audit-texts", "30", "--database", database]
        return subprocess.call([*quick, *args])
    texts = _texts()
    databases = ["sqlite", "postgresql"] if options.database == "both" else [options.database]
    paths = {"all": PATHS, "floor": [*FLOOR, "inline"] * 2}.get(options.path, [options.path])
    failed = False
    for database in databases:
        scoring = _scoring_ms(texts, options.audit_texts)
        on_own = [p for p in paths if p != "queued"]
        if on_own:
            failed |= _run(options, database, texts, on_own, {}, scoring)
        if "queued" in paths:
            extra = {"PROVENANCE_INLINE_MAX_BYTES": "0"}
            failed |= _run(options, database, texts, ["queued"], extra, scoring)
    return 1 if failed else 0


PATHS = ["inline", "queued", "audit", "public"]
FLOOR = ["health", "read"]  # lighter than a check: the framework's floor (``--path floor``)


def _scoring_ms(texts: list[tuple[str, bool]], batch: int) -> dict[str, float]:
    """CPU (ms) of scoring each text in this process: ``score_text`` (a check's) and
    ``score_texts`` per text (an audit's), under the demo key, on the same texts."""
    from detector.core import config as defaults
    from detector.decision.decide import decide, decide_many
    from detector.evidence.detection import Document
    from detector.text.tokenizers import load_tokenizer

    tokenizer = load_tokenizer("default")
    config = defaults.KeyConfig(  # the demo key's settings: the registry's defaults
        key=DEMO_KEY,
        algorithm=defaults.DEFAULT_ALGORITHM,
        alpha=defaults.DEFAULT_ALPHA,
        context_width=defaults.DEFAULT_CONTEXT_WIDTH,
        deduplicate_contexts="single_turn",
        deduplicate_contexts_max_history=None,
    )

    def doc(text: str) -> Document:
        return Document(tokenizer.encode(text), (config,), ngrams=tokenizer.ngram_table)

    one = [t for t, _ in texts]
    for t in one[:4]:
        decide([doc(t)], names=["k"], threshold=0.01)
    start = time.process_time()
    for _ in range(3):
        for t in one:
            decide([doc(t)], names=["k"], threshold=0.01)
    single = (time.process_time() - start) * 1000 / (3 * len(one))
    start = time.process_time()
    for _ in range(3):
        decide_many([[doc(t)] for t in one], names=["k"], threshold=0.01)
    many = (time.process_time() - start) * 1000 / (3 * len(one))
    # Beside each path: scoring one text (the floor's requests too), or a text of an audit.
    return {path: single for path in [*PATHS, *FLOOR]} | {"audit": many}


def _run(
    options: argparse.Namespace,
    database: str,
    texts: list[tuple[str, bool]],
    paths: list[str],
    extra: dict[str, str],
    scoring: dict[str, float],
) -> bool:
    """Load runs, one per path, against a fresh runner; True when any went wrong."""
    from provenance.runner.redis_server import free_port
    from tests.provenance.postgres_server import PostgresServer

    with contextlib.ExitStack() as stack:
        tmp_name = stack.enter_context(tempfile.TemporaryDirectory())
        url, roots = "", []
        if database == "postgresql":
            server = stack.enter_context(PostgresServer())
            url = server.url
            assert server.process is not None
            roots.append(server.process.pid)
        port = free_port()
        env = _runner_env(Path(tmp_name), port, url, extra)
        proc, password, _ = _start_embedded(env)
        roots.append(proc.pid)
        failed = False
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_web(base)
            tokens = [_login_token(base, password)]
            tokens += _more_users(env, options.users - 1)
            read_ids = _own_checks(base, tokens, texts, options.clients) if "read" in paths else []
            for path in paths:
                failed |= _one_path(
                    options, database, base, tokens, texts, roots, path, scoring, read_ids
                )
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    return failed


SETTLE_LIMIT_S = 900.0


def settle(roots: list[int], limit: float = SETTLE_LIMIT_S) -> float:
    """Wait until the worker and the runner are idle (under a tenth of a core for two
    seconds running): the demo key's first-start calibration (the runner's thread) and the
    readings a path left queued (the worker's) are done before a path's warm-up, so that no
    path is charged with another's work. Returns the seconds waited."""
    start = time.monotonic()
    quiet = 0
    before = cpu_by_component(roots)
    while time.monotonic() - start < limit:
        time.sleep(1.0)
        now = cpu_by_component(roots)
        busy = sum(now.get(k, 0.0) - before.get(k, 0.0) for k in ("worker", "runner"))
        before = now
        quiet = quiet + 1 if busy < 0.1 else 0
        if quiet >= 2:
            break
    return time.monotonic() - start


def _one_path(
    options: argparse.Namespace,
    database: str,
    base: str,
    tokens: list[str],
    texts: list[tuple[str, bool]],
    roots: list[int],
    path: str,
    scoring: dict[str, float],
    read_ids: list[str],
) -> bool:
    def tally(budget: int) -> Tally:
        return Tally(
            budget=budget,
            wait=options.wait,
            path=path,
            audit_texts=options.audit_texts,
            read_ids=read_ids,
        )

    waited = settle(roots)
    print(f"  [{path}] worker and runner idle after {waited:.0f} s", flush=True)
    # Warm: every client at once for a few seconds, so that each gunicorn process has
    # answered (a handful of sequential requests can all land on one or two of them).
    warm = tally(16 * options.clients)
    _run_clients(base, tokens, texts, warm, time.monotonic() + 3.0, options.clients)
    if warm.errors:
        raise SystemExit(f"warm-up failed: {warm.errors[:3]}")
    measured = tally(options.max_requests)
    cpu_before, client_before = cpu_by_component(roots), _client_cpu()
    start = time.monotonic()
    _run_clients(base, tokens, texts, measured, start + options.seconds, options.clients)
    elapsed = time.monotonic() - start
    cpu_after, client_after = cpu_by_component(roots), _client_cpu()
    # The work the window queued and the worker had not done by its end (the readings of
    # undecided checks, under the adaptive default) belongs to the window's checks: it is
    # drained and counted in.
    drained = settle(roots)
    cpu_drained = cpu_by_component(roots)
    cpu = {name: cpu_drained[name] - cpu_before.get(name, 0.0) for name in cpu_drained}
    cpu["client"] = client_after - client_before
    backlog = sum(cpu_drained.get(k, 0.0) - cpu_after.get(k, 0.0) for k in ("worker", "runner"))
    users = min(len(tokens), options.clients)
    _report(
        measured, elapsed, options.clients, database, cpu, users, scoring[path], elapsed + drained
    )
    print(
        f"  after the window: worker and runner idle after {drained:.0f} s, {backlog:.1f} s "
        "of their CPU spent on the window's work (counted above)",
        flush=True,
    )
    return bool(measured.errors)


def _own_checks(
    base: str, tokens: list[str], texts: list[tuple[str, bool]], clients: int
) -> list[str]:
    """One inline check per client, under its own user: what the ``read`` path reads."""
    ids = []
    for n in range(clients):
        answer = httpx.post(
            f"{base}/api/v1/checks?wait=10",
            json={"text": texts[n % len(texts)][0]},
            headers={"Authorization": f"Token {tokens[n % len(tokens)]}"},
            timeout=60,
        )
        ids.append(answer.json()["id"])
    return ids


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main())
