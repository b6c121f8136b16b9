"""``make compose-test``: the compose deployment built from this checkout, brought up as
docker-compose.yml and .env.example describe, and exercised from outside (docs/compose.md).

Each step prints its figure; any failure stops the run with the step's name, the services'
state and their last log lines, and a non-zero exit. The deployment runs as its own compose
project (``provenance-ci``) from a copy of docker-compose.yml and an .env made from
.env.example under var/compose/project/, with its own volumes, removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PROJECT_DIR = REPO / "var" / "compose" / "project"
PROJECT = "provenance-ci"
IMAGE = "provenance:latest"
# The web answers again within this many seconds of PostgreSQL's container restarting
# (docs/compose.md).
POSTGRES_RECOVERY_S = 60
RECOVERED_REQUESTS = 20  # each on a new connection: both web workers take some
AUDIT_TEXTS = 1000
# Texts per audit task in this run: small chunks, so that the worker is killed while it
# holds some and others wait.
AUDIT_CHUNK = 50
FIGURES: list[str] = []
LEFTOVERS: list[str] = []


class Failed(Exception):
    pass


def log(message: str) -> None:
    print(message, flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    log(f"== {name}")
    start = time.monotonic()
    try:
        yield
    except Exception as exc:
        raise Failed(f"step '{name}' failed: {exc}") from exc
    log(f"   ({time.monotonic() - start:.1f} s)")


def figure(text: str) -> None:
    FIGURES.append(text)
    log(f"   figure: {text}")


def run(*args: str, check: bool = True, timeout: float = 600, **kwargs: Any) -> str:
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise Failed(f"{' '.join(args[:6])}... exit {result.returncode}: {result.stderr[-2000:]}")
    return result.stdout


def compose_command() -> list[str]:
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"]


COMPOSE: list[str] = []


def compose(*args: str, check: bool = True, timeout: float = 600) -> str:
    return run(*COMPOSE, "-p", PROJECT, *args, check=check, timeout=timeout, cwd=PROJECT_DIR)


def container(service: str) -> str:
    cid = compose("ps", "-q", service).strip()
    if not cid:
        raise Failed(f"no container for {service}")
    return cid


def health(service: str) -> str:
    return run("docker", "inspect", "-f", "{{.State.Health.Status}}", container(service)).strip()


def psql(sql: str) -> str:
    return compose(
        "exec", "-T", "postgres", "psql", "-U", "provenance", "-d", "provenance", "-At", "-c", sql
    ).strip()


def wait_for(what: str, ready: Callable[[], bool], timeout: float, every: float = 1.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if ready():
                return time.monotonic() - start
        except (OSError, Failed, urllib.error.URLError):
            pass
        time.sleep(every)
    raise Failed(f"{what}: not within {timeout:.0f} s")


class Web:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.token = ""

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 30
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def ok(self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200,)) -> Any:
        status, answer = self.request(method, path, body)
        if status not in expect:
            raise Failed(f"{method} {path}: {status} {str(answer)[:500]}")
        return answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_env(port: int) -> dict[str, str]:
    """.env from .env.example: the required secrets filled in (random, URL-safe), plain HTTP
    for this trial on localhost, the published port, small audit chunks and no power
    measurement in calibrations (no generator runs here)."""
    from cryptography.fernet import Fernet

    values = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "PROVENANCE_KEK": Fernet.generate_key().decode(),
        "POSTGRES_PASSWORD": secrets.token_urlsafe(24),
        "REDIS_PASSWORD": secrets.token_urlsafe(24),
        "DJANGO_HTTPS": "0",
        "WEB_PORT": str(port),
        "PROVENANCE_AUDIT_CHUNK": str(AUDIT_CHUNK),
        "PROVENANCE_CALIBRATION_POWER_PROMPTS": "0",
        "PROVENANCE_CALIBRATION_ASSIST_TEXTS": "0",
    }
    lines, seen = [], set()
    for line in (REPO / ".env.example").read_text().splitlines():
        name = line.split("=", 1)[0] if "=" in line and not line.startswith("#") else None
        if name in values:
            lines.append(f"{name}={values[name]}")
            seen.add(name)
        else:
            lines.append(line)
    missing = set(values) - seen
    if missing:
        raise Failed(f".env.example lacks {sorted(missing)}")
    PROJECT_DIR.mkdir(parents=True, exist_ok=True)
    env_path = PROJECT_DIR / ".env"
    env_path.write_text("\n".join(lines) + "\n")
    env_path.chmod(0o600)
    shutil.copyfile(REPO / "docker-compose.yml", PROJECT_DIR / "docker-compose.yml")
    return values


def wait_healthy(services: tuple[str, ...], timeout: float) -> float:
    return wait_for(
        f"{', '.join(services)} healthy",
        lambda: all(health(s) == "healthy" for s in services),
        timeout,
        2,
    )


def up(timeout: float = 300) -> float:
    compose("up", "-d", "--no-build", timeout=timeout)
    return wait_healthy(("postgres", "redis", "web", "worker", "sweeper"), timeout)


def texts_for_audit(key_value: int) -> tuple[list[dict[str, str]], set[str]]:
    """Half watermarked (windows of one long reference draw), half human (the human
    reference text's words shuffled)."""
    from detector.text.tokenizers import load_tokenizer
    from tests.provenance.watermark import HUMAN_TEXT, watermarked_ids

    tokenizer = load_tokenizer("default")
    half = AUDIT_TEXTS // 2
    window, stride = 150, 8
    ids = watermarked_ids(key_value, num_tokens=window + stride * half, seed=7)
    texts, marked = [], set()
    for i in range(half):
        client_id = f"wm-{i}"
        texts.append(
            {
                "client_id": client_id,
                "text": tokenizer.decode(ids[i * stride : i * stride + window]).strip(),
            }
        )
        marked.add(client_id)
    words = HUMAN_TEXT.split()
    rng = random.Random(3)
    for i in range(AUDIT_TEXTS - half):
        rng.shuffle(words)
        texts.append({"client_id": f"human-{i}", "text": " ".join(words)})
    return texts, marked


def check_text(web: Web, text: str, key_id: str) -> dict[str, Any]:
    """Submitted without waiting (202: queued for the worker), then polled."""
    answer = web.ok("POST", "/api/v1/checks", {"text": text, "key_ids": [key_id]}, expect=(202,))
    check_id = answer["id"]
    result: dict[str, Any] = {}

    def finished() -> bool:
        result.update(web.ok("GET", f"/api/v1/checks/{check_id}"))
        return result["status"] in ("done", "failed")

    wait_for(f"check {check_id} scored", finished, 180, 0.5)
    return result


def derived_image_with_migration(workdir: Path) -> str:
    """A new image FROM the current one adding one migration (a table) to the checks app:
    what a release with a schema change looks like. Returns the migration's name."""
    listing = run("docker", "run", "--rm", IMAGE, "ls", "/app/provenance/checks/migrations")
    numbered = sorted(n for n in listing.split() if n[:4].isdigit() and n.endswith(".py"))
    parent = numbered[-1].removesuffix(".py")
    name = "9999_compose_release_probe"
    (workdir / f"{name}.py").write_text(
        "from django.db import migrations\n\n\n"
        "class Migration(migrations.Migration):\n"
        f"    dependencies = [('checks', '{parent}')]\n"
        "    operations = [migrations.RunSQL(\n"
        "        'CREATE TABLE compose_release_probe (id integer PRIMARY KEY)',\n"
        "        'DROP TABLE compose_release_probe')]\n"
    )
    (workdir / "Dockerfile").write_text(
        f"FROM {IMAGE}\nCOPY {name}.py /app/provenance/checks/migrations/{name}.py\n"
    )
    run("docker", "build", "-q", "-t", IMAGE, str(workdir))
    return name


def dump_state() -> None:
    try:
        log(compose("ps", check=False))
        log(compose("logs", "--tail", "40", check=False, timeout=60))
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        log(f"(no compose state: {exc})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true", help="leave the deployment running")
    args = parser.parse_args()
    COMPOSE.extend(compose_command())
    total = time.monotonic()
    try:
        with step("images: engine, base stand-ins, provenance:latest from this checkout"):
            start = time.monotonic()
            subprocess.run(["bash", str(REPO / "scripts" / "compose-images.sh")], check=True)
            figure(f"images ready in {time.monotonic() - start:.0f} s")
        exercise()
    except Failed as failure:
        log(f"COMPOSE TEST FAILED: {failure}")
        dump_state()
        if not args.keep:
            compose("down", "-v", "--remove-orphans", check=False, timeout=300)
        log(f"compose-test: FAILED after {time.monotonic() - total:.0f} s")
        return 1
    finally:
        original = PROJECT_DIR.parent / "original-image"
        if original.exists():  # the derived release image is replaced by this checkout's
            derived = run("docker", "image", "inspect", "-f", "{{.Id}}", IMAGE, check=False)
            run("docker", "tag", original.read_text().strip(), IMAGE, check=False)
            if derived.strip() and derived.strip() != original.read_text().strip():
                LEFTOVERS.append(derived.strip())
            original.unlink()
    if not args.keep:
        with step("down -v: containers and volumes removed"):
            compose("down", "-v", "--remove-orphans", timeout=300)
            for image in LEFTOVERS:  # the release image of the last step
                run("docker", "image", "rm", image, check=False)
    log("== figures")
    for text in FIGURES:
        log(f"   {text}")
    log(f"compose-test: passed in {time.monotonic() - total:.0f} s")
    return 0


def exercise() -> None:
    port = free_port()
    compose("down", "-v", "--remove-orphans", check=False, timeout=300) if (
        PROJECT_DIR / "docker-compose.yml"
    ).exists() else None
    values = write_env(port)
    web = Web(port)

    with step("up: postgres, redis, web (migrate), worker, sweeper healthy"):
        figure(f"all five services healthy {up():.0f} s after up")
        live = web.ok("GET", "/healthz")
        ready = web.ok("GET", "/readyz")
        if live != {"status": "ok"} or ready["status"] != "ready":
            raise Failed(f"probes: {live} {ready}")
        figure(f"/readyz through the published port: {ready['checks']}")
        secrets_in_env = [values["POSTGRES_PASSWORD"], values["REDIS_PASSWORD"]]
        if any(secret in json.dumps(ready) for secret in secrets_in_env):
            raise Failed("a password in /readyz")
        status, page = web.request("GET", "/accounts/login/")
        css = [p for p in str(page).split('"') if p.startswith("/static/") and p.endswith(".css")]
        if status != 200 or not css or web.request("GET", css[0])[0] != 200:
            raise Failed(f"login page {status} or its stylesheet {css[:1]} not served")
        figure(f"login page and its stylesheet served ({css[0]})")

    with step("superuser and API token with manage.py in the web container"):
        password = secrets.token_urlsafe(16)
        compose(
            "exec", "-T", "-e", f"DJANGO_SUPERUSER_PASSWORD={password}", "web",
            "python", "manage.py", "createsuperuser", "--noinput",
            "--username", "operator", "--email", "operator@example.com",
        )  # fmt: skip
        web.token = compose(
            "exec", "-T", "web", "python", "manage.py", "shell", "-c",
            "from django.contrib.auth.models import User; "
            "from provenance.accounts.services import "
            "team_create, membership_set, api_token_rotate; "
            "user = User.objects.get(username='operator'); "
            "team = team_create(name='operations', oracle_tier='auditor'); "
            "membership_set(user=user, team=team); "
            "print(api_token_rotate(user=user)[1])",
        ).strip().splitlines()[-1]  # fmt: skip
        me = web.ok("GET", "/api/v1/checks?limit=1")
        figure(f"token accepted by the API (checks listed: {me['count']})")

    with step("key registered through the API"):
        key = web.ok("POST", "/api/v1/keys", {"name": "compose-ci"}, expect=(201,))
        key_id, key_value = key["id"], int(key["value"], 0)
        figure(f"key {key_id} on tokenizer {key.get('tokenizer')}")

    from tests.provenance.watermark import HUMAN_TEXT, watermarked_text

    with step("checks through POST /api/v1/checks, scored by the worker container"):
        scored_before = worker_scored()
        marked = check_text(web, watermarked_text(key_value, num_tokens=160, seed=1), key_id)
        # Long enough for a verdict (a short human text is "inconclusive"): a licence's
        # first 5,000 characters, as the web's own tests use.
        human = check_text(web, human_long_text(), key_id)
        if marked["verdict"] != "watermarked" or human["verdict"] != "not_watermarked":
            raise Failed(f"verdicts: {marked['verdict']} / {human['verdict']}")
        scored = worker_scored() - scored_before
        if scored < 2:
            raise Failed(f"the worker container's log shows {scored} checks scored, not 2")
        figure(
            f"watermarked text: {marked['verdict']} (log10 p={marked['log10_p']:.1f}); "
            f"human text: {human['verdict']} (log10 p={human['log10_p']:.1f}); "
            f"both queued (202) and scored in the worker container ({scored} tasks in its log)"
        )

    with step(f"audit of {AUDIT_TEXTS} texts while the worker is killed and restarted"):
        texts, marked_ids = texts_for_audit(key_value)
        audit = web.ok(
            "POST", "/api/v1/audits", {"texts": texts, "key_ids": [key_id]}, expect=(202,)
        )
        audit_id = audit["id"]
        wait_for("audit under way", lambda: progress(web, audit_id)[0] > 0, 120, 0.2)
        done_at_kill = progress(web, audit_id)[0]
        worker = container("worker")
        restarts = restart_count(worker)
        # Killed inside its container, as a crash or the kernel's OOM killer would: `docker
        # kill` (or stop) is a manual stop, after which Docker does not apply the policy.
        pid = kill_celery_inside(worker)
        killed = time.monotonic()
        figure(f"worker's celery (pid {pid}) killed (SIGKILL) with {done_at_kill} texts done")
        wait_for(
            "worker restarted by Docker's restart policy",
            lambda: restart_count(worker) > restarts and running(worker),
            60,
            0.5,
        )
        wait_for("worker healthy again", lambda: health("worker") == "healthy", 180, 2)
        figure(
            f"worker restarted by its restart policy (restart count {restart_count(worker)}), "
            f"healthy {time.monotonic() - killed:.0f} s after the kill"
        )
        wait_for("audit finished", lambda: progress(web, audit_id)[1] == 0, 600, 1)
        elapsed = time.monotonic() - killed
        rows = psql(
            "SELECT count(*), count(DISTINCT position), sum((status = 'done')::int), "
            "sum((verdict = 'watermarked')::int) FROM checks_check "
            f"WHERE audit_id = '{audit_id}'"
        ).split("|")
        count, distinct, done, flagged = (int(x or 0) for x in rows)
        if not count == distinct == done == AUDIT_TEXTS:
            raise Failed(f"rows {count}, positions {distinct}, done {done}")
        items = audit_items(web, audit_id)
        if sorted(items) != sorted(t["client_id"] for t in texts):
            raise Failed("the audit's items are not its texts, each once")
        caught = sum(items[c] == "watermarked" for c in marked_ids)
        false = sum(v == "watermarked" for c, v in items.items() if c not in marked_ids)
        if caught < 0.95 * len(marked_ids) or false > 0.05 * (AUDIT_TEXTS - len(marked_ids)):
            raise Failed(f"verdicts: {caught} watermarked caught, {false} human flagged")
        figure(
            f"audit: {done}/{AUDIT_TEXTS} done, each once ({distinct} distinct positions), "
            f"{elapsed:.0f} s after the kill; {caught}/{len(marked_ids)} watermarked caught, "
            f"{false}/{AUDIT_TEXTS - len(marked_ids)} human flagged ({flagged} in all)"
        )

    with step(f"PostgreSQL restarted: the web answers again within {POSTGRES_RECOVERY_S} s"):
        run("docker", "restart", container("postgres"))
        restarted_at = time.monotonic()

        def serves() -> bool:
            status, _ = web.request("GET", f"/api/v1/checks/{marked['id']}", timeout=10)
            return status == 200 and web.request("GET", "/readyz", timeout=10)[0] == 200

        wait_for("web answers after the restart", serves, POSTGRES_RECOVERY_S, 0.5)
        figure(
            f"web answered a check and /readyz {time.monotonic() - restarted_at:.1f} s "
            "after PostgreSQL's restart"
        )
        # Once it answers, no request fails: each web worker tests its kept connection
        # before reusing it (one of them, reused untested, used to answer 503 here).
        statuses = [
            web.request("GET", "/api/v1/checks?limit=1", timeout=10)[0]
            for _ in range(RECOVERED_REQUESTS)
        ]
        if statuses != [200] * RECOVERED_REQUESTS:
            raise Failed(f"after the web answered again: {statuses}")
        figure(f"then {RECOVERED_REQUESTS}/{RECOVERED_REQUESTS} requests answered 200")
        after = check_text(web, HUMAN_TEXT, key_id)
        figure(f"a new check after the restart: {after['verdict']}")

    with step("down, then up: every check kept (volumes)"):
        before = web.ok("GET", "/api/v1/checks?limit=1")["count"]
        compose("down", timeout=300)
        took = up()
        kept = web.ok("GET", "/api/v1/checks?limit=1")["count"]
        again = web.ok("GET", f"/api/v1/checks/{marked['id']}")
        if kept != before or again["verdict"] != "watermarked":
            raise Failed(f"{before} checks before, {kept} after")
        figure(f"{kept} checks before and after down/up (healthy again in {took:.0f} s)")

    with step("a release image with a new migration applies it on start"):
        with tempfile.TemporaryDirectory() as tmp:
            original = run("docker", "image", "inspect", "-f", "{{.Id}}", IMAGE).strip()
            (PROJECT_DIR.parent / "original-image").write_text(original)
            name = derived_image_with_migration(Path(tmp))
        compose("up", "-d", "--no-build", timeout=300)
        took = wait_healthy(("web", "worker", "sweeper"), 300)
        applied = psql(
            f"SELECT count(*) FROM django_migrations WHERE app = 'checks' AND name = '{name}'"
        )
        table = psql("SELECT to_regclass('compose_release_probe') IS NOT NULL")
        if applied != "1" or table != "t":
            raise Failed(f"migration recorded {applied}, table {table}")
        web.ok("GET", f"/api/v1/checks/{marked['id']}")
        figure(f"migration {name} applied by the web's start; healthy {took:.0f} s after up")


def worker_scored() -> int:
    """Scoring tasks the worker container's log shows done (Celery's "succeeded" lines)."""
    logs = subprocess.run(
        ["docker", "logs", container("worker")], capture_output=True, text=True, timeout=60
    )
    return sum(
        "provenance.checks.score_check[" in line and "succeeded" in line
        for line in (logs.stdout + logs.stderr).splitlines()
    )


def human_long_text() -> str:
    from tests.provenance.watermark import HUMAN_TEXT

    licence = Path("/usr/share/common-licenses/GPL-3")
    return licence.read_text()[:5000] if licence.exists() else " ".join([HUMAN_TEXT] * 6)


def progress(web: Web, audit_id: str) -> tuple[int, int]:
    counts = web.ok("GET", f"/api/v1/audits/{audit_id}")["counts"]
    return counts["done"] + counts["failed"], counts["open"]


def running(container_id: str) -> bool:
    return run("docker", "inspect", "-f", "{{.State.Running}}", container_id).strip() == "true"


def restart_count(container_id: str) -> int:
    """How many times Docker's restart policy has started the container again."""
    return int(run("docker", "inspect", "-f", "{{.RestartCount}}", container_id).strip())


# Run inside the worker's container (python -c): SIGKILL the celery main process, the child
# of the container's init (compose's `init: true`), and print its pid. Its own PID 1 could
# not be killed from inside: the kernel ignores SIGKILL sent to a namespace's init from
# within the namespace. Processes started by `docker exec` have no parent inside (ppid 0).
KILL_CELERY = """
import os, signal
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/stat") as stat, open(f"/proc/{pid}/cmdline", "rb") as cmd:
            parent, line = int(stat.read().rsplit(")", 1)[1].split()[1]), cmd.read()
    except OSError:
        continue
    if parent == 1 and b"celery" in line:
        os.kill(int(pid), signal.SIGKILL)
        print(pid)
"""


def kill_celery_inside(container_id: str) -> int:
    """SIGKILL the worker's celery from inside its container; its pid there."""
    said = run("docker", "exec", container_id, "python", "-c", KILL_CELERY).split()
    if len(said) != 1:
        raise Failed(f"expected one celery process under the container's init, found {said}")
    return int(said[0])


def audit_items(web: Web, audit_id: str) -> dict[str, str]:
    items: dict[str, str] = {}
    offset, seen = 0, 0
    while True:
        page = web.ok("GET", f"/api/v1/audits/{audit_id}/items?limit=500&offset={offset}")
        for item in page["results"]:
            seen += 1
            items[item["client_id"]] = item["verdict"]
        if not page.get("next"):
            break
        offset += 500
    if seen != len(items):
        raise Failed(f"{seen} items listed, {len(items)} distinct")
    return items


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
