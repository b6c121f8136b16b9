"""docker-compose.yml checked without a Docker engine: what every service runs exists in this
checkout, every variable it sets is read by the code, images are pinned, every service has a
healthcheck, only the web publishes a port, and the generator's image holds what the
generator's code imports. Where ``docker compose`` exists, ``docker compose config`` passes."""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES: dict = COMPOSE["services"]
APP_SERVICES = ["web", "worker", "sweeper"]
# Read by the images and tools themselves, not by this project's code.
EXTERNAL_VARIABLES = {
    "postgres": {"POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD"},
    "generator": {"VLLM_USE_V2_MODEL_RUNNER", "HF_HUB_OFFLINE"},
    "redis": {"REDISCLI_AUTH"},
    "cache": {"REDISCLI_AUTH"},
}
# Interpolated by docker compose itself, never read by the code: the passwords (required, no
# default) and the web's published port.
REQUIRED_VARIABLES = {"POSTGRES_PASSWORD", "REDIS_PASSWORD"}
COMPOSE_VARIABLES = REQUIRED_VARIABLES | {"WEB_PORT"}
# vLLM's image installs these as vLLM's own requirements (vllm/requirements/*.txt); the rest
# of what generator/, detector/ and kernels/ import must be installed by Dockerfile.generator.
IN_VLLM_IMAGE = {
    "vllm", "torch", "transformers", "tokenizers", "numpy", "triton", "gguf",
    "starlette", "uvicorn", "anyio", "httpx", "mpmath", "mistral_common", "sentencepiece",
}  # fmt: skip
# import name -> distribution name, where they differ
IMPORT_NAMES = {"yaml": "pyyaml", "c2pa": "c2pa-python", "c2pa_text": "c2pa-text"}


def _sources(*packages: str) -> str:
    return "\n".join(
        path.read_text() for package in packages for path in (REPO / package).rglob("*.py")
    )


def _words(command: object) -> list[str]:
    """The words of a service's command, through one ``sh -c "..."`` level."""
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if words[:2] == ["sh", "-c"]:
        words = shlex.split(words[2].replace("&&", " "))
    return words


def test_the_app_services_run_modules_and_commands_that_exist():
    from django.core.management import get_commands

    for name in APP_SERVICES:
        words = _words(SERVICES[name]["command"])
        for i, word in enumerate(words):
            if word == "manage.py":
                assert words[i + 1] in get_commands(), f"{name}: manage.py {words[i + 1]}"
            if word == "gunicorn":
                module, attribute = words[i + 1].split(":")
                assert hasattr(importlib.import_module(module), attribute), f"{name}: {module}"
            if word == "-A":
                assert hasattr(importlib.import_module(f"{words[i + 1]}.celery"), "app")
    assert "gunicorn" in _words(SERVICES["web"]["command"])
    assert "worker" in _words(SERVICES["worker"]["command"])


def test_the_generator_loads_classes_that_exist_in_this_checkout():
    words = _words(SERVICES["generator"]["command"])
    targets = [
        words[i + 1]
        for i, word in enumerate(words)
        if word in ("--logits-processors", "--middleware")
    ]
    assert len(targets) == 3  # the processor, the provenance headers, the token gate
    for target in targets:
        module, _, name = target.replace(":", ".").rpartition(".")
        path = REPO / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text())  # not imported: vLLM is not installed here
        assert name in {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def test_every_variable_a_service_sets_is_read_by_the_code():
    settings_source = (REPO / "provenance" / "settings.py").read_text()
    generator_source = _sources("generator", "detector")
    anchor = COMPOSE["x-app"]["environment"]
    for name, service in SERVICES.items():
        env = dict(service.get("environment") or {})
        if name in APP_SERVICES:
            env.update(anchor)
        for variable in env:
            if variable in EXTERNAL_VARIABLES.get(name, set()):
                continue
            source = settings_source if name in APP_SERVICES else generator_source
            assert f'"{variable}"' in source, f"{name} sets {variable}, which nothing reads"


def test_env_example_lists_only_variables_the_code_reads():
    code = _sources("provenance", "generator", "detector", "kernels")
    listed = re.findall(r"^([A-Z][A-Z0-9_]+)=", (REPO / ".env.example").read_text(), re.M)
    unread = [name for name in listed if f'"{name}"' not in code and name not in COMPOSE_VARIABLES]
    assert listed and unread == []


def _pinned(image: str) -> bool:
    """A tag with at least major.minor (``16.4-alpine``, ``v0.33.0``) or a digest."""
    return "@sha256:" in image or re.search(r":v?\d+\.\d+", image) is not None


def test_every_image_is_pinned():
    for name, service in SERVICES.items():
        if "build" in service or name in APP_SERVICES:
            continue  # built from this checkout
        assert _pinned(service["image"]), f"{name}: {service['image']} is not pinned"
    for dockerfile in ("Dockerfile", "Dockerfile.generator"):
        bases = _bases(dockerfile)
        assert bases and all(_pinned(base) for base in bases), f"{dockerfile}: {bases}"


def _bases(dockerfile: str) -> list[str]:
    """The base images a Dockerfile names, ``ARG`` defaults substituted (``FROM ${BASE}``)."""
    text = (REPO / dockerfile).read_text()
    defaults = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", text, re.M))
    bases = re.findall(r"^FROM\s+(\S+)", text, re.M)
    return [re.sub(r"\$\{(\w+)\}", lambda m: defaults.get(m[1], m[0]), b) for b in bases]


def test_every_service_has_a_healthcheck_and_waits_for_healthy_dependencies():
    for name, service in SERVICES.items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    needs = COMPOSE["x-app"]["depends_on"]  # the app services wait for healthy stores
    assert {dep["condition"] for dep in needs.values()} == {"service_healthy"}


def test_only_the_web_publishes_a_port():
    published = {name for name, service in SERVICES.items() if service.get("ports")}
    assert published == {"web"}


def _third_party_imports(*entry_modules: str) -> set[str]:
    """Third-party packages the entry modules import, following this project's modules they
    import (at any level: a lazy import inside a function counts)."""
    ours = {"detector", "generator", "kernels", "provenance"}
    found: set[str] = set()
    todo, seen = list(entry_modules), set()
    while todo:
        module = todo.pop()
        path = REPO / (module.replace(".", "/") + ".py")
        if module in seen or not path.exists():
            path = REPO / module.replace(".", "/") / "__init__.py"
            if module in seen or not path.exists():
                continue
        seen.add(module)
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                top = name.split(".")[0]
                if top in ours:
                    todo.append(name)
                elif top not in sys.stdlib_module_names:
                    found.add(top)
    return found


def test_the_generator_image_installs_what_the_generator_imports():
    entries = ["generator.vllm_v2", "generator.provenance_asgi"]  # what the service loads
    needed = _third_party_imports(*entries) - IN_VLLM_IMAGE
    dockerfile = (REPO / "Dockerfile.generator").read_text()
    installed = dict(re.findall(r'"([a-z0-9_.-]+)([<>=!~][^"]*)"', dockerfile))
    assert set(installed) == {IMPORT_NAMES.get(name, name) for name in needed}
    # The same ranges as the project's own dependencies: one version policy.
    declared = re.findall(r'"([a-z0-9_.-]+)(?:\[[a-z,]+\])?([<>=!~][^"]*)"', _pyproject())
    for package, spec in installed.items():
        assert (package, spec) in declared, f"{package}{spec} differs from pyproject.toml"
    copied = set(re.findall(r"^COPY (\w+) ", dockerfile, re.M))
    assert copied == {"generator", "detector", "kernels"}


def _pyproject() -> str:
    return (REPO / "pyproject.toml").read_text()


def test_the_worker_keeps_its_node_name_across_restarts():
    # A restarted worker releases what the dead one held only under the same node name.
    assert "-n worker@%h" in SERVICES["worker"]["command"]
    assert "worker@$$HOSTNAME" in " ".join(SERVICES["worker"]["healthcheck"]["test"])


def _compose_command() -> list[str] | None:
    """``docker compose``, else Debian's ``docker-compose`` (1.29), else None."""
    if shutil.which("docker") and (
        subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


@pytest.mark.skipif(_compose_command() is None, reason="docker compose is not installed here")
def test_docker_compose_config_accepts_the_file(tmp_path):
    # Beside its .env (``env_file: .env``), as an operator runs it: a copy in a directory.
    env = tmp_path / ".env"
    required = "".join(f"{name}=test-value\n" for name in sorted(REQUIRED_VARIABLES))
    env.write_text((REPO / ".env.example").read_text() + required)
    shutil.copyfile(REPO / "docker-compose.yml", tmp_path / "docker-compose.yml")
    command = _compose_command() or []
    done = subprocess.run(
        [*command, "--env-file", str(env), "-f", str(tmp_path / "docker-compose.yml")]
        + ["--profile", "gpu", "config", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_the_stores_need_passwords_from_the_environment_with_no_default():
    text = (REPO / "docker-compose.yml").read_text()
    assert "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?" in text
    assert "--requirepass" in text and "REDISCLI_AUTH: ${REDIS_PASSWORD:?" in text
    anchor = COMPOSE["x-app"]["environment"]
    assert "${REDIS_PASSWORD:?" in anchor["REDIS_URL"]
    assert "${POSTGRES_PASSWORD:?" in anchor["DATABASE_URL"]
    assert "provenance:provenance@" not in text


def test_the_generator_runs_behind_the_token_gate():
    command = _words(SERVICES["generator"]["command"])
    assert "generator.auth.AuthGate" in command
    assert "PROVENANCE_CLIENTS_FILE" in SERVICES["generator"]["environment"]


def test_the_public_cache_is_its_own_bounded_redis():
    command = " ".join(_words(SERVICES["cache"]["command"]))
    assert "--maxmemory 256mb" in command and "--maxmemory-policy allkeys-lru" in command
    assert "--maxmemory" not in " ".join(_words(SERVICES["redis"]["command"]))  # the broker's
    url = COMPOSE["x-app"]["environment"]["PROVENANCE_PUBLIC_CACHE_URL"]
    assert "@cache:6379/" in url and "${REDIS_PASSWORD:?" in url
    assert "cache" in COMPOSE["x-app"]["depends_on"]


def test_the_web_healthcheck_asks_the_readiness_endpoint():
    from provenance.health import PROBES

    test = " ".join(SERVICES["web"]["healthcheck"]["test"])
    path = re.search(r"http://127\.0\.0\.1:8000(/\w+)", test)
    assert path is not None and path[1] == "/readyz" and path[1] in PROBES
    assert "/healthz" in PROBES


def test_the_app_image_takes_its_base_and_package_index_as_build_arguments():
    text = (REPO / "Dockerfile").read_text()
    arguments = set(re.findall(r"^ARG\s+(\w+)", text, re.M))
    assert {"BASE_IMAGE", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"} <= arguments
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", text, re.M)
    assert _bases("Dockerfile") == ["python:3.11.11-slim-bookworm"]  # the official default
    # No index is named on pip's command line: the build arguments decide.
    assert "--index-url" not in text and "--extra-index-url" not in text


def test_the_build_context_is_what_the_dockerfile_copies():
    ignored = (REPO / ".dockerignore").read_text().split()
    copied = set(re.findall(r"^COPY (\S+)", (REPO / "Dockerfile").read_text(), re.M))
    opened = {line[1:] for line in ignored if line.startswith("!")}
    assert ignored[0] == "*" or "*" in ignored
    assert copied <= opened, copied - opened


def _standin_names() -> dict[str, str]:
    script = (REPO / "scripts" / "build-standin-images.sh").read_text()
    return dict(re.findall(r"^(\w+)_IMAGE=\$\{\w+:-(\S+)\}$", script, re.M))


def test_the_stand_ins_carry_the_names_the_compose_file_and_dockerfile_use():
    names = _standin_names()
    assert names["PYTHON"] == _bases("Dockerfile")[0]
    assert names["POSTGRES"] == SERVICES["postgres"]["image"]
    assert names["REDIS"] == SERVICES["redis"]["image"]
    # Stand-ins from Debian bookworm's own packages: the official tags of the same major
    # versions and Debian release.
    assert all(name.endswith("-bookworm") for name in names.values())


def test_the_compose_test_drives_the_documented_commands():
    driver = (REPO / "scripts" / "compose_test.py").read_text()
    for command in (
        '"createsuperuser"',
        '"/api/v1/checks"',
        '"/api/v1/audits"',
        '"exec", container_id, "python", "-c", KILL_CELERY',
        '"{{.RestartCount}}"',
    ):
        assert command in driver, command
    # Docker treats `docker kill` and `docker stop` as a manual stop: no restart policy after.
    assert '"docker", "kill"' not in driver and '"docker", "start"' not in driver
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^compose-test: setup\n\t@\$\(PY\) scripts/compose_test.py$", makefile, re.M)


def test_the_wheelhouse_index_lists_each_file_under_its_normalized_project(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "compose_index", REPO / "scripts" / "compose_index.py"
    )
    assert spec and spec.loader
    index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(index)
    files = tmp_path / "files"
    files.mkdir()
    names = [
        "Django_Rest_Knox-5.1.0-py3-none-any.whl",
        "psycopg_binary-3.3.9-cp311-cp311-manylinux2014_x86_64.whl",
        "zope.interface-7.0.tar.gz",
        "notes.txt",
    ]
    for name in names:
        (files / name).write_text("")
    assert index.write(tmp_path) == 3
    assert sorted(p.name for p in (tmp_path / "simple").iterdir() if p.is_dir()) == [
        "django-rest-knox", "psycopg-binary", "zope-interface",
    ]  # fmt: skip
    page = (tmp_path / "simple" / "zope-interface" / "index.html").read_text()
    assert 'href="../../files/zope.interface-7.0.tar.gz"' in page


def test_worker_and_sweeper_start_after_the_web_has_migrated():
    # The web turns healthy only after `migrate`; a worker started before has no worker row.
    for name in ("worker", "sweeper"):
        needs = SERVICES[name]["depends_on"]
        assert needs["web"]["condition"] == "service_healthy", name
        assert {dep["condition"] for dep in needs.values()} == {"service_healthy"}
        assert {"postgres", "redis"} <= set(needs)
    assert "manage.py migrate" in SERVICES["web"]["command"]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_worker_runs_under_an_init_that_dies_with_celery():
    # Without it celery is the container's PID 1, which nothing inside may SIGKILL.
    assert SERVICES["worker"]["init"] is True
    assert SERVICES["worker"]["restart"] == "unless-stopped"


# PID 1 of a fresh PID namespace, as docker-init in the worker's container: a stand-in celery
# and another process as its children; the compose test's kill code, run as `docker exec`
# runs it (no parent inside the namespace: here PID 1 itself runs it).
_FAKE_INIT = """
import os, subprocess, sys
assert os.getpid() == 1
sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
celery = subprocess.Popen([*sleep, "celery", "-A", "provenance", "worker"])
other = subprocess.Popen(sleep)
exec(sys.argv[1])
print("celery", celery.pid, celery.wait(10), "other", other.poll(), flush=True)
other.kill()
"""


def test_the_compose_test_kills_celery_inside_the_container_and_nothing_else():
    driver = _script("compose_test")
    unshare = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]
    if not shutil.which("unshare") or subprocess.run([*unshare, "true"]).returncode != 0:
        pytest.skip("no PID namespaces here (unshare)")
    done = subprocess.run(
        [*unshare, sys.executable, "-c", _FAKE_INIT, driver.KILL_CELERY],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    killed, report = done.stdout.split("\n", 1)
    assert report.split() == ["celery", killed, "-9", "other", "None"]


def test_every_web_keeps_idle_connections_as_make_run_does():
    """Longer than any wait the product asks of a polling client and than a proxy's idle
    timeout (tests/provenance/test_polling.py): the compose web and the image's own command."""
    from provenance.runner.embedded import WEB_KEEPALIVE_S

    words = _words(SERVICES["web"]["command"])
    assert words[words.index("--keep-alive") + 1] == str(WEB_KEEPALIVE_S)
    cmd = re.search(r"^CMD (\[.*\])$", (REPO / "Dockerfile").read_text(), re.M)
    assert cmd is not None
    image = yaml.safe_load(cmd[1])
    assert image[0] == "gunicorn" and image[image.index("--keep-alive") + 1] == str(WEB_KEEPALIVE_S)
