"""Keeping ``make run``'s children alive: a child that exits is started again after a backoff
(0.5 s, doubling, at most 30 s) while the others keep serving. A child that crashes
``max_crashes`` times within ``window`` seconds is in a crash loop: the supervisor gives up
with a message naming it and its log (an optional child, the playground's generator, is
left stopped and the rest keeps serving).

A child is anything with a start function returning a ``Popen``; its output goes to its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from provenance.runner.processes import stop_process

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0


class CrashLoop(RuntimeError):
    """A required child keeps crashing; the message names it and its log."""


@dataclass
class Child:
    name: str
    start: Callable[[], subprocess.Popen[bytes]]
    log: Path
    required: bool = True
    stop_timeout: float = 10.0
    stop: Callable[[], None] | None = None  # instead of SIGTERM-then-SIGKILL of the process
    process: subprocess.Popen[bytes] | None = None
    crashes: deque[float] = field(default_factory=deque)
    restart_at: float | None = None
    given_up: bool = False


def open_log(path: Path) -> IO[bytes]:
    """Append to a child's log, created private (0600) in a private directory (0700)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, "ab")


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start a command with stdout and stderr appended to ``log``, in its own session (the
    terminal's Ctrl-C reaches only the supervisor, which stops children in order)."""
    with open_log(log) as out:
        return subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


class Supervisor:
    def __init__(
        self,
        children: list[Child],
        *,
        max_crashes: int = 5,
        window: float = 120.0,
        backoff: float = BACKOFF_FIRST_S,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.children = children
        self.backoff = backoff
        self.max_crashes = max_crashes
        self.window = window
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))

    def start_all(self) -> None:
        """Start every child in order (a child that fails to start is retried by ``poll``)."""
        for child in self.children:
            self._start(child, time.monotonic())

    def poll(self) -> None:
        """Notice exited children and start those whose backoff is over. Raises CrashLoop."""
        now = time.monotonic()
        for child in self.children:
            if child.given_up:
                continue
            if child.restart_at is None and child.process is not None:
                code = child.process.poll()
                if code is not None:
                    self._crashed(child, now, f"exited with code {code}")
            if child.restart_at is not None and now >= child.restart_at:
                self._start(child, now)

    def stop_all(self) -> None:
        """Stop children in reverse order of start, each bounded by its stop timeout."""
        for child in reversed(self.children):
            if child.stop is not None:
                child.stop()
            else:
                stop_process(child.process, timeout=child.stop_timeout)

    def _start(self, child: Child, now: float) -> None:
        child.restart_at = None
        try:
            child.process = child.start()
        except Exception as exc:  # a start that fails counts as a crash: retried with backoff
            child.process = None
            self._crashed(child, now, f"failed to start ({type(exc).__name__}: {exc})")

    def _crashed(self, child: Child, now: float, why: str) -> None:
        child.crashes.append(now)
        while child.crashes and child.crashes[0] < now - self.window:
            child.crashes.popleft()
        count = len(child.crashes)
        if count >= self.max_crashes:
            message = (
                f"  {child.name} {why}; it crashed {count} times in {self.window:.0f} s. "
                f"See its log: {child.log}"
            )
            if child.required:
                raise CrashLoop(message + "\n  stopping everything.")
            child.given_up = True
            self.say(message + f"\n  {child.name} stays stopped; the rest keeps serving.")
            return
        delay = min(BACKOFF_MAX_S, self.backoff * 2 ** (count - 1))
        child.restart_at = now + delay
        self.say(f"  {child.name} {why}; restarting in {delay:g} s (log: {child.log})")
