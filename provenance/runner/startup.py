"""What ``make run`` claims before it starts anything, each refused at once with a message
that says what to do (``StartRefused``):

- its data directory, one runner each: the runner holds an exclusive lock (``flock``) on
  ``<data dir>/runner.lock`` for as long as it runs, with its pid and address written in the
  file. Two runners on one directory would share one SQLite database, its Redis directories,
  logs and key files, and sweep twice. The kernel drops the lock when the process ends,
  however it ends: a runner killed with SIGKILL leaves no stale lock;
- its web port: taken by another program (or another checkout's runner), the web would
  crash-loop on the bind and the runner would give up saying only "web exited".
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path

LOCK_NAME = "runner.lock"


class StartRefused(RuntimeError):
    """The runner cannot start here; the message says why and what to do."""


def claim_data_dir(data_dir: Path, address: str) -> int:
    """Lock ``data_dir`` for this runner (the descriptor to keep open while it runs), or
    StartRefused naming the running one's pid and address."""
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").split()
        os.close(fd)
        pid, where = (holder + ["?", "?"])[:2]
        raise StartRefused(
            f"make run is already running on the data directory {data_dir} (pid {pid}, "
            f"serving {where}). Use that one, or stop it first (Ctrl-C in its terminal, or "
            f"kill {pid}); to run a second one beside it, give it a data directory and a port "
            f"of its own: PROVENANCE_DATA_DIR=/another/dir PROVENANCE_PORT=<port> make run"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {address}\n".encode(), 0)
    return fd


def _bindable(host: str, port: int) -> OSError | None:
    """None when a listening socket could be bound to ``host:port`` now, else the error. The
    socket gunicorn would make: IPv6 for an IPv6 address, else IPv4 (a name is resolved to
    its IPv4 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As gunicorn sets it: a connection of a former server in TIME_WAIT does not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except socket.gaierror as exc:
            return OSError(errno.EADDRNOTAVAIL, f"{host!r} does not resolve: {exc.strerror}")
        except OSError as exc:
            return exc
    return None


def check_port(host: str, port: int) -> None:
    """StartRefused when the web could not listen on ``host:port``: which port, and the
    variable that chooses another (with a port that is free now)."""
    problem = _bindable(host, port)
    if problem is None:
        return
    if problem.errno != errno.EADDRINUSE:
        raise StartRefused(
            f"the web cannot listen on port {port} on {host} ({problem.strerror}): set "
            f"PROVENANCE_HOST to an address of this machine, or PROVENANCE_PORT to another port"
        )
    free = next((p for p in range(port + 1, min(port + 100, 65536)) if not _bindable(host, p)), 0)
    raise StartRefused(
        f"port {port} on {host} is already in use (by another program, or by make run from "
        f"another checkout or data directory). Stop that, or choose another port: "
        f"PROVENANCE_PORT={free or '<port>'} make run"
    )
