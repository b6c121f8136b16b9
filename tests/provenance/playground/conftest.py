"""The playground's embedded generator, one for the session: a fixture defined here, once, so
that every module using it (the generator's tests and the browser's) shares the same process
(a session fixture imported into two modules would be two fixtures, and two vLLM servers)."""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest

from provenance.runner.generator import EmbeddedGenerator
from provenance.runner.redis_server import free_port
from tests.waiting import wait_until


def wait_healthy(url: str, process, timeout: float = 300) -> None:
    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    alive = None if process is None else (lambda: process.poll() is None)
    wait_until(healthy, timeout, 0.5, alive=alive, what="the generator's /health")


@pytest.fixture(scope="session")
def shared_generator(tmp_path_factory):
    """One embedded generator for the session (vLLM starts in ~35 s), started on first use
    (again if it died) and stopped when the session's fixtures are torn down, before pytest's
    summary, so its shutdown output never follows the result line; shared with the browser
    tests, which import the ``generator`` fixture."""
    running: list[EmbeddedGenerator] = []

    def get() -> EmbeddedGenerator:
        if not running or not running[0].alive():
            env = {**os.environ, "OMP_NUM_THREADS": "1", **_signing_env(tmp_path_factory)}
            started = EmbeddedGenerator(tmp_path_factory.mktemp("gen"), free_port(), env).start()
            running.append(started)
            wait_healthy(started.url, started.process)
        return running[-1]

    yield get
    for started in running:
        started.stop()


DEVELOPMENT_CERTIFICATE: list[Any] = []


def _signing_env(tmp_path_factory: Any) -> dict[str, str]:
    """A development C2PA certificate for the generator, as ``make run`` gives it: replies of
    keys marked for Content Credentials are signed (``c2pa_certificate`` is its CA)."""
    from detector.credentials.certificates import development_certificate

    made = development_certificate("Provenance")
    DEVELOPMENT_CERTIFICATE[:] = [made]
    folder = tmp_path_factory.mktemp("c2pa")
    cert, key = folder / "signer.pem", folder / "signer.key"
    cert.write_bytes(made.credential.chain_pem)
    key.write_bytes(made.credential.key_pem)
    key.chmod(0o600)
    return {"PROVENANCE_C2PA_CERT": str(cert), "PROVENANCE_C2PA_KEY": str(key)}


@pytest.fixture
def c2pa_certificate() -> Any:
    """The development certificate the shared generator signs with (after it started)."""
    return DEVELOPMENT_CERTIFICATE[0]


@pytest.fixture
def generator(shared_generator, settings, alice_key):
    """The embedded generator on this test's registry keys; the playground points at it."""
    running = shared_generator()
    running.write_keys()
    settings.PROVENANCE_PLAYGROUND = {
        **settings.PROVENANCE_PLAYGROUND,
        "GENERATOR_URL": running.url,
        "GENERATOR_TOKEN": running.token,
        "READ_TIMEOUT": 60,
    }
    return running
