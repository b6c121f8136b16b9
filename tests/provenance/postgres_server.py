"""A throwaway PostgreSQL server for the tests and benchmarks: Debian's binaries, a cluster in
a temporary directory, a free port, trust authentication on 127.0.0.1 only.

``initdb`` and ``postgres`` refuse to run as root: as root, the cluster directory is given to
the ``postgres`` system user (created by Debian's package) and both run through ``runuser``.
Durability is off (``fsync``, ``synchronous_commit``): the data lives as long as the server.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from provenance.runner.processes import stop_process
from provenance.runner.redis_server import free_port

SYSTEM_USER = "postgres"


class PostgresStartError(RuntimeError):
    pass


def postgres_bindir() -> Path:
    """Directory of ``initdb``/``postgres``: Debian's newest /usr/lib/postgresql/N/bin, else
    the one holding ``postgres`` on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=_version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    if on_path:
        return Path(on_path).parent
    raise PostgresStartError(
        "no PostgreSQL server binaries "
        "(install Debian's postgresql: scripts/install-system-deps.sh)"
    )


def _version(path: str) -> int:
    try:
        return int(Path(path).parts[-3])
    except ValueError:
        return 0


class PostgresServer:
    """``start()`` / ``stop()`` (or a context manager); ``url`` for DATABASE_URL."""

    def __init__(
        self, port: int | None = None, host: str = "127.0.0.1", wrap: Sequence[str] = ()
    ) -> None:
        """``wrap`` prefixes every command (``ip netns exec NAME``: a server in a network
        namespace, listening on an address of that namespace)."""
        self.port = port or free_port()
        self.host = host
        self.wrap = list(wrap)
        self.bindir = postgres_bindir()
        self.root: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgres://{SYSTEM_USER}@{self.host}:{self.port}/postgres"

    def _as_owner(self, args: list[str]) -> list[str]:
        if os.geteuid() == 0:
            return [*self.wrap, "runuser", "-u", SYSTEM_USER, "--", *args]
        return [*self.wrap, *args]

    def start(self, timeout: float = 60.0) -> PostgresServer:
        # Under /tmp, not pytest's 0700 root-owned tree: the postgres user must reach it.
        self.root = Path(tempfile.mkdtemp(prefix="provenance-pg-"))
        data, log = self.root / "data", self.root / "server.log"
        if os.geteuid() == 0:
            shutil.chown(self.root, SYSTEM_USER)
        init = subprocess.run(
            self._as_owner(
                [str(self.bindir / "initdb"), "-D", str(data), "-U", SYSTEM_USER]
                + ["--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"]
            ),
            capture_output=True,
            text=True,
        )
        if init.returncode != 0:
            raise PostgresStartError(f"initdb failed: {init.stderr.strip()[-2000:]}")
        if self.host != "127.0.0.1":  # initdb trusts loopback only; this host's subnet too
            with open(data / "pg_hba.conf", "a") as hba:
                hba.write("host all all samenet trust\n")
        settings = {
            "listen_addresses": self.host,
            "port": str(self.port),
            "unix_socket_directories": str(self.root),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
        }
        args = [str(self.bindir / "postgres"), "-D", str(data)]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]
        with open(log, "ab") as out:
            # Own session: a Ctrl-C in the terminal reaches our caller, which stops us.
            self.process = subprocess.Popen(
                self._as_owner(args), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._wait_ready(timeout, log)
        return self

    def _wait_ready(self, timeout: float, log: Path) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise PostgresStartError(f"postgres exited early:\n{log.read_text()[-2000:]}")
            ready = subprocess.run(
                [
                    *self.wrap,
                    str(self.bindir / "pg_isready"),
                    "-h",
                    self.host,
                    "-p",
                    str(self.port),
                ],
                capture_output=True,
            )
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        self.stop()
        raise PostgresStartError(f"postgres did not answer on port {self.port}")

    def stop(self, timeout: float = 20.0) -> None:
        # "fast" shutdown: open client connections are cut, not waited for. pg_ctl talks to
        # the server itself (a signal to runuser would stop runuser, not postgres).
        if self.process is not None and self.process.poll() is None and self.root is not None:
            subprocess.run(
                self._as_owner(
                    [str(self.bindir / "pg_ctl"), "stop", "-D", str(self.root / "data")]
                    + ["-m", "fast", "-t", str(int(timeout))]
                ),
                capture_output=True,
            )
        stop_process(self.process, 5.0)
        self.process = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
