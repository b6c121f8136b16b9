"""The generator beside ``make run``: an OpenAI-compatible server on the embedded model.

Backend: vLLM's own OpenAI server with our watermark processor when vLLM is importable
(measured 1.2x faster than the transformers backend at batch 1 and 1.8x at batch 8 on
SmolLM2 here; it starts in ~35 s), else the project's small transformers server (~5 s), with a
log line saying so. ``PROVENANCE_GENERATOR_BACKEND`` (``vllm``/``transformers``) overrides.

Design (keys): the registry is the source of truth. The runner writes every active key to
``<data dir>/generator-keys.json`` (0600, atomic) and starts ``python -m generator serve
--keys`` on it. Both backends follow that file (``KeyStore.refreshed``), so ``refresh()``
(called by the runner's supervision loop) only rewrites it when the active key set changed
(a fingerprint of ids, names, settings; no value): added, retired and rotated keys apply to
the next request without a restart. Set ``PROVENANCE_GENERATOR_URL`` to use a generator you
run yourself instead (then write its key file with ``manage.py playground_keyfile``).

Design (access): ``--clients`` names a clients file holding only the playground's bearer
token (``generator.auth``), issued afresh each run and handed to the web process as
``PROVENANCE_GENERATOR_TOKEN``; the generator answers no other caller.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from generator.auth import issue_token
from provenance import env as environment
from provenance.playground.keyfile import keyfile_write, keyset_fingerprint
from provenance.runner.processes import stop_process
from provenance.runner.supervisor import spawn

CHECK_EVERY_S = 5.0


def embedded_backend() -> str:
    """``vllm`` when importable (the faster one here), else ``transformers``."""
    chosen = environment.generator_backend()
    if chosen:
        return chosen
    if importlib.util.find_spec("vllm") is not None:
        return "vllm"
    print("  playground: vLLM is not installed; using the transformers generator", flush=True)
    return "transformers"


class EmbeddedGenerator:
    def __init__(self, data_dir: Path, port: int, env: dict[str, str]) -> None:
        self.path = data_dir / "generator-keys.json"
        # The playground's own bearer token, new every run: the generator accepts no other
        # caller. The web side may use every key (it allows each user only their team's).
        self.clients = data_dir / "generator-clients.json"
        self.clients.unlink(missing_ok=True)
        self.token = issue_token(self.clients, "playground", ["*"], opt_out=True)
        self.port = port
        self.env = env
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.fingerprint = ""
        self.checked = 0.0
        self.backend = ""

    def start(self, log: Path | None = None) -> EmbeddedGenerator:
        """Spawn the server (its output appended to ``log`` when given)."""
        self.write_keys()
        self.backend = embedded_backend()
        args = [
            *(sys.executable, "-m", "generator", "serve", "--backend", self.backend),
            *("--keys", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)),
            *("--clients", str(self.clients)),
        ]
        print(f"  playground: starting the {self.backend} generator on {self.url}", flush=True)
        if log is not None:
            self.process = spawn(args, self.env, log)
        else:  # New session: Ctrl-C reaches the runner only, which stops children in order.
            self.process = subprocess.Popen(args, env=self.env, start_new_session=True)
        return self

    def write_keys(self) -> int:
        """Write the key file from the registry now; returns how many keys it holds."""
        self.fingerprint = keyset_fingerprint()
        return keyfile_write(self.path)

    def alive(self) -> bool:
        return self.process is None or self.process.poll() is None

    def refresh(self) -> None:
        """Rewrite the key file on a changed key set (checked every few seconds; one query)."""
        if time.monotonic() - self.checked < CHECK_EVERY_S:
            return
        self.checked = time.monotonic()
        if keyset_fingerprint() != self.fingerprint:
            print("  playground: the active keys changed; generator key file rewritten", flush=True)
            self.write_keys()

    def stop(self, timeout: float = 20.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        # The server first: vLLM's stops its engine processes itself (a group-wide SIGTERM
        # made the engine die under the server, which then logged errors). Then the group,
        # so no engine process outlives it.
        stop_process(process, timeout)
        _signal_group(process, signal.SIGKILL)


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:  # already gone
        pass


def external_url() -> str | None:
    """The generator the operator runs, if any (then the runner starts none)."""
    return environment.generator_url()
