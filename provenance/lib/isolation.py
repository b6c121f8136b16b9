"""Reading untrusted files in a separate process that is killed at its deadline.

A deadline checked by the reading code itself holds only where that code looks (between PDF
pages, every 10,000 HTML elements); a parser's own loop inside one page (pypdf's layout
mode, charset detection, a regular expression) runs past it. Here the reading runs in a
reader process and the caller waits for its answer no longer than the deadline: a reader
that has not answered by then is killed (SIGKILL) and the caller gets ``Overrun``. Nothing
the reader does can hold the caller (a web request's document slot, a Celery worker) past
the deadline by more than the kill.

Readers are started ahead of need and reused: a plain ``python`` running this module's
``main`` (a fresh interpreter, not a fork of the caller: no Django, no Celery, no torch, no
threads or locks copied from the caller, and none of its environment but what Python needs,
so no secret), which imports the document libraries once, then serves one request at a time
over two pipes. Up to ``IDLE_READERS`` wait in each process;
one that was killed is replaced at once in the background, so the next document does not
wait for an interpreter to start. A reader serves ``READER_USES`` documents, then ends
(what a large document left in its memory goes with it). The reader also arms its own alarm
a little past each deadline, so an orphan (its caller killed) ends as well.

Requests and answers are JSON plus the file's bytes (``multiprocessing.connection``'s
framing): the caller never unpickles what a process that parsed hostile input sends back.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from provenance import env as environment

IDLE_READERS = 2  # readers kept waiting in one process
READER_USES = 200  # documents one reader reads before it is replaced
START_SECONDS = 60.0  # the longest a reader may take to start (imports on a loaded machine)
_OWN_ALARM_GRACE = 5  # the reader's own alarm: this many seconds past the deadline
_ROOT = Path(__file__).resolve().parents[2]  # the directory that holds ``provenance``


class Overrun(Exception):
    """The reader did not answer within the deadline; it was killed."""


class ReaderFailed(Exception):
    """The reader ended without an answer (it crashed, or ran out of memory)."""


# --- the caller's side ------------------------------------------------------------------


class _Reader:
    """One reader process and the two ends of its pipes."""

    def __init__(self) -> None:
        child_reads, parent_writes = os.pipe()
        parent_reads, child_writes = os.pipe()
        env = environment.environment_subset(_passed_on)
        env |= {"OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(_ROOT)],
                stdin=child_reads,
                stdout=child_writes,
                close_fds=True,
                env=env,
                cwd=str(_ROOT),
            )
        except BaseException:
            for fd in (child_reads, parent_writes, parent_reads, child_writes):
                os.close(fd)
            raise
        os.close(child_reads)
        os.close(child_writes)
        self.send = Connection(parent_writes, readable=False)
        self.receive = Connection(parent_reads, writable=False)
        self.uses = 0
        self.ready = False

    def wait_ready(self, seconds: float) -> bool:
        """Whether the reader has imported its libraries, waiting ``seconds`` at most."""
        if self.ready:
            return True
        if not self.receive.poll(max(seconds, 0.0)):
            return False
        try:
            self.receive.recv_bytes()
        except (EOFError, OSError):
            raise ReaderFailed("the document reader did not start") from None
        self.ready = True
        return True

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        """Kill the process (if it runs) and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for end in (self.send, self.receive):
            end.close()


# The environment a reader gets: what Python and the C libraries need, never the product's
# settings (its secrets: the KEK, the database URL, the secret key) or anything else.
_ENVIRONMENT = frozenset(("PATH", "HOME", "LANG", "TMPDIR", "TZ", "PYTHONPATH", "VIRTUAL_ENV"))


def _passed_on(name: str) -> bool:
    return name in _ENVIRONMENT or name.startswith("LC_")


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Reader] = []

    def lease(self) -> _Reader:
        with self.lock:
            while self.idle:
                reader = self.idle.pop()
                if reader.alive():
                    return reader
                reader.close()
        return _Reader()

    def give_back(self, reader: _Reader) -> None:
        with self.lock:
            if reader.uses < READER_USES and len(self.idle) < IDLE_READERS and reader.alive():
                self.idle.append(reader)
                return
        reader.close()

    def replace(self) -> None:
        """Start a reader for the next caller now, in the background (after a kill)."""

        def start() -> None:
            try:
                reader = _Reader()
                started = reader.wait_ready(START_SECONDS)
            except (OSError, ReaderFailed):
                return
            if started:
                self.give_back(reader)
            else:
                reader.close()

        threading.Thread(target=start, name="document-reader-start", daemon=True).start()

    def forget(self) -> None:
        """In a forked child: the parent's readers are the parent's (their pipes are closed
        here, the processes left alone)."""
        self.lock = threading.Lock()
        for reader in self.idle:
            for end in (reader.send, reader.receive):
                end.close()
        self.idle = []


_pool = _Pool()
os.register_at_fork(after_in_child=_pool.forget)


def close_idle() -> None:
    """End this process's waiting readers (the next document starts one)."""
    with _pool.lock:
        idle, _pool.idle = _pool.idle, []
    for reader in idle:
        reader.close()


def call(
    operation: str,
    request: dict[str, Any],
    content: bytes,
    seconds: float,
    until: float | None = None,
) -> Any:
    """``operation`` of this module's reader (``OPERATIONS``) on ``request`` and the file's
    ``content``, answered within ``seconds`` (else ``Overrun``; the reader is killed). The
    answer is what the operation returned (JSON). Waiting for a reader to start (the first
    document of a process, or the one after a kill) does not count against ``seconds``
    unless ``until`` (``time.monotonic()``) is given: then nothing goes past it (a batch's
    deadline)."""
    try:
        reader = _pool.lease()
    except OSError:  # no process could be started (out of processes or memory)
        raise ReaderFailed("no document reader could be started") from None
    sent = done = False
    try:
        wait = START_SECONDS if until is None else until - time.monotonic()
        if not reader.wait_ready(min(wait, START_SECONDS)):
            if until is None:
                raise ReaderFailed("the document reader did not start")
            raise Overrun(operation)
        started = time.monotonic()
        if until is not None:
            seconds = min(seconds, until - started)
        header = {"operation": operation, "request": request, "seconds": seconds}
        sent = True
        reader.send.send_bytes(json.dumps(header).encode())
        reader.send.send_bytes(content)
        left = seconds - (time.monotonic() - started)
        if not reader.receive.poll(max(left, 0.0)):
            raise Overrun(operation)
        answer = json.loads(reader.receive.recv_bytes())
        reader.uses += 1
        done = True
    except (EOFError, OSError, ValueError):
        raise ReaderFailed("the document reader ended without an answer") from None
    finally:
        if done or (not sent and reader.alive()):  # still starting: the next caller's
            _pool.give_back(reader)
        else:
            reader.close()
            _pool.replace()
    return answer


# --- the reader's side ------------------------------------------------------------------

# The reader's first lines: ``provenance`` as a bare namespace for the plain modules under
# ``provenance.lib`` (importing the package itself would start Django and Celery).
_BOOT = (
    "import sys, types\n"
    "package = types.ModuleType('provenance')\n"
    "package.__path__ = [sys.argv[1] + '/provenance']\n"
    "sys.modules['provenance'] = package\n"
    "from provenance.lib.isolation import main\n"
    "main()\n"
)


# What a reader may be asked to do, by name: "module:function" taking (request, the file's
# bytes, seconds) and answering JSON; and what it runs once before it says it is ready.
OPERATIONS = {
    "document": "provenance.lib.documents:isolated_read",
    "table": "provenance.lib.tables:isolated_read",
}
WARM_UP = ("provenance.lib.documents:isolated_warm_up",)


def _function(name: str) -> Callable[..., Any]:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]


def main() -> None:
    """The reader: requests from stdin, answers on the original stdout (anything a library
    prints goes to stderr instead)."""
    import logging
    import traceback

    logging.basicConfig(level=logging.ERROR)  # pypdf's warnings about a hostile file: quiet
    requests = Connection(os.dup(0), writable=False)
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)
    for name in WARM_UP:
        _function(name)()
    answers.send_bytes(b"ready")
    while True:
        try:
            header = json.loads(requests.recv_bytes())
            content = requests.recv_bytes()
        except EOFError:  # the caller closed the pipe, or exited
            return
        signal.alarm(int(header["seconds"]) + _OWN_ALARM_GRACE)  # SIGALRM ends the reader
        try:
            seconds = float(header["seconds"])
            operation = _function(OPERATIONS[header["operation"]])
            answer = operation(header["request"], content, seconds)
        except Exception:
            traceback.print_exc()
            answer = {"failed": True}
        signal.alarm(0)
        answers.send_bytes(json.dumps(answer).encode())
