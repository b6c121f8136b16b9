"""Real verifier instances on loopback for the peer tests: each its own data directory (its
SQLite database, KEK and report-signing key), one published key of a known value, and one
gunicorn process (no Celery worker, no generator: a public check is answered in the web
process). Light on purpose: migrate, one setup script, one web process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from provenance.runner.processes import stop_process
from provenance.runner.redis_server import free_port
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[3]
POW_MAX = 2000  # the instances' proof of work, kept small

# Run in the instance's environment: its key (value from argv) published under its model's
# name, and, when asked, a partner whose key is printed last.
SETUP = """
import sys, django
django.setup()
from provenance.accounts.services import team_create
from provenance.keys.services import key_create, tokenizer_default
from provenance.public.services import partner_create
from provenance.keys.services import key_publish
value, model, partner = sys.argv[1], sys.argv[2], sys.argv[3]
team = team_create(name="publisher")
key, _ = key_create(name="published", team=team, tokenizer=tokenizer_default(), value=value)
key_publish(key=key, public_name=model)
if partner:
    print(partner_create(name=partner)[1])
"""


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ}
    for name in ("DATABASE_URL", "REDIS_URL", "PROVENANCE_KEK", "PROVENANCE_CACHE_URL"):
        env.pop(name, None)
    env.update(
        DJANGO_SETTINGS_MODULE="provenance.settings",
        PROVENANCE_DATA_DIR=str(data_dir),
        PROVENANCE_EMBEDDED="1",
        PROVENANCE_MODEL_ASSIST="0",
        PROVENANCE_PUBLIC_POW_MAX_NUMBER=str(POW_MAX),
        OMP_NUM_THREADS="1",
        **extra,
    )
    return env


@dataclass
class Instance:
    """One verifier: ``setup()`` (migrate, publish), then ``start()`` with its settings."""

    root: Path
    organization: str
    model: str
    key_value: int
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def discovery(self) -> str:
        return f"{self.url}/.well-known/provenance.json"

    @property
    def log(self) -> Path:
        return self.root / "web.log"

    def setup(self, partner: str = "") -> str:
        """Migrate and publish; returns the key of ``partner`` (registered here) if named."""
        env = _env(self.root, PROVENANCE_PUBLIC_ORGANIZATION=self.organization)
        migrate = [sys.executable, "manage.py", "migrate", "--verbosity", "0"]
        subprocess.run(migrate, cwd=REPO, env=env, check=True, timeout=300)
        args = [sys.executable, "-c", SETUP, str(self.key_value), self.model, partner]
        out = subprocess.run(
            args, cwd=REPO, env=env, check=True, timeout=300, capture_output=True, text=True
        )
        return out.stdout.split()[-1] if partner else ""

    def start(self, **settings: str) -> None:
        env = _env(self.root, PROVENANCE_PUBLIC_ORGANIZATION=self.organization, **settings)
        env["PROVENANCE_WEB_PRELOAD"] = "1"  # the tokenizers load before the first check
        args = [
            *(sys.executable, "-m", "gunicorn", "provenance.wsgi:application"),
            *("--bind", f"127.0.0.1:{self.port}", "--workers", "1", "--threads", "8"),
            *("--preload", "--no-control-socket", "--timeout", "120"),
        ]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def wait_ready(self) -> None:
        assert self.process is not None
        wait_until(
            self._answers,
            180,
            0.2,
            alive=lambda: self.process is not None and self.process.poll() is None,
            what=lambda: self.log.read_text(errors="replace")[-3000:],
        )

    def _answers(self) -> bool:
        # This instance's own document: a port picked free can still be taken by another
        # server before this one binds it, and that server's answer is not this one's.
        try:
            response = httpx.get(self.discovery, timeout=1)
            found = response.json()["organization"]["name"] if response.status_code == 200 else ""
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return False
        return bool(found == self.organization)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, 20)
            self.process = None
