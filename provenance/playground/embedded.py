"""The generator beside ``make run``: the small OpenAI-compatible server on the embedded model.

Design (keys): the registry is the source of truth. At start-up the runner writes every
active key to ``<data dir>/generator-keys.json`` (0600, atomic) and starts
``python -m generator serve --keys`` on it; the server loads the file once. While running,
``refresh()`` (called by the runner's supervision loop) compares a fingerprint of the active
key set (ids, names, settings; no value) and, when keys were added, retired or rotated,
rewrites the file and restarts the server (~5 s for SmolLM2) so new keys work without a
manual restart. Set ``PROVENANCE_GENERATOR_URL`` to use a generator you run yourself instead
(then write its key file with ``manage.py playground_keyfile``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from provenance.playground.keyfile import keyfile_write, keyset_fingerprint

CHECK_EVERY_S = 5.0


class EmbeddedGenerator:
    def __init__(self, data_dir: Path, port: int, env: dict[str, str]) -> None:
        self.path = data_dir / "generator-keys.json"
        self.port = port
        self.env = env
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.fingerprint = ""
        self.checked = 0.0

    def start(self) -> EmbeddedGenerator:
        self.fingerprint = keyset_fingerprint()
        if keyfile_write(self.path) == 0:
            print("  playground: no active key yet; the generator starts with the first one")
            return self
        args = [
            *(sys.executable, "-m", "generator", "serve", "--backend", "transformers"),
            *("--keys", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)),
        ]
        # New session: Ctrl-C reaches the runner only, which stops children in order.
        self.process = subprocess.Popen(args, env=self.env, start_new_session=True)
        return self

    def alive(self) -> bool:
        return self.process is None or self.process.poll() is None

    def refresh(self) -> None:
        """Restart on a changed key set (checked every few seconds; one cheap query)."""
        if time.monotonic() - self.checked < CHECK_EVERY_S:
            return
        self.checked = time.monotonic()
        if keyset_fingerprint() != self.fingerprint:
            print("  playground: the active keys changed; restarting the generator", flush=True)
            self.stop()
            self.start()

    def stop(self, timeout: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def external_url() -> str | None:
    """The generator the operator runs, if any (then the runner starts none)."""
    return os.environ.get("PROVENANCE_GENERATOR_URL") or None
