"""Settings come from the environment through typed helpers that fail loudly."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from provenance import env as project
from provenance import settings as product


@pytest.mark.parametrize(
    ("helper", "raw", "message"),
    [
        (lambda: project.env_int("X_TEST", 5, minimum=1), "five", "integer"),
        (lambda: project.env_int("X_TEST", 5, minimum=1), "0", ">= 1"),
        (lambda: project.env_bool("X_TEST", False), "maybe", "boolean"),
        (lambda: project.env_float("X_TEST", 0.01, 0.0, 1.0), "1.5", r"\(0.0, 1.0\)"),
        (lambda: project.env_float("X_TEST", 0.01, 0.0, 1.0), "tiny", "number"),
    ],
)
def test_a_malformed_value_fails_loudly(monkeypatch, helper, raw, message):
    monkeypatch.setenv("X_TEST", raw)
    with pytest.raises(ValueError, match=message):
        helper()


def test_empty_or_missing_values_mean_the_default(monkeypatch):
    monkeypatch.setenv("X_TEST", "")
    assert project.env_int("X_TEST", 7) == 7 and project.env_str("X_TEST", "d") == "d"
    monkeypatch.delenv("X_TEST")
    assert project.env_list("X_TEST", ["a"]) == ["a"] and project.env_bool("X_TEST", True)


def test_values_parse(monkeypatch):
    monkeypatch.setenv("X_TEST", " a, b ,,c ")
    assert project.env_list("X_TEST", []) == ["a", "b", "c"]
    monkeypatch.setenv("X_TEST", "off")
    assert project.env_bool("X_TEST", True) is False


ROOT = Path(__file__).resolve().parents[2]
# The one module per package that may read os.environ: the product's, the detector's own
# defaults, and the generator's (its own deployable). kernels reads none (Triton reads its own).
READERS = {
    "provenance": ROOT / "provenance" / "env.py",
    "detector": ROOT / "detector" / "defaults.py",
    "generator": ROOT / "generator" / "config.py",
    "kernels": None,
}


def _is_environ(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    ) or (isinstance(node, ast.Attribute) and node.attr == "getenv")


def _environ_reads(path: Path) -> list[int]:
    """Lines of ``path`` that read the environment. Writes (``os.environ[N] = v``,
    ``.setdefault``/``.update`` as a statement, for a child process or a library) and handing
    the whole environment to a child (``{**os.environ}``, ``dict(os.environ, ...)``) are
    not reads."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    reads = []
    for node in ast.walk(tree):
        if not _is_environ(node):
            continue
        parent = parents[node]
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store):
            continue
        if isinstance(parent, ast.Attribute) and parent.attr in ("setdefault", "update"):
            if isinstance(parents[parents[parent]], ast.Expr):  # the value is not used
                continue
        if isinstance(parent, ast.Dict) and None in parent.keys:  # {**os.environ, ...}
            continue
        if isinstance(parent, ast.Call) and getattr(parent.func, "id", "") == "dict":
            continue
        reads.append(node.lineno)
    return sorted(reads)


def test_each_package_reads_the_environment_in_one_module_at_most():
    found = {}
    for package, reader in READERS.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            if path != reader and (lines := _environ_reads(path)):
                found[str(path.relative_to(ROOT))] = lines
    assert found == {}
    for reader in filter(None, READERS.values()):
        assert _environ_reads(reader), reader  # the scan sees the reads it allows


def test_the_scan_tells_a_read_from_a_write():
    import tempfile

    code = (
        "import os\n"
        "os.environ['A'] = '1'\n"
        "os.environ.setdefault('B', '2')\n"
        "child = {**os.environ, 'C': '3'}\n"
        "a = os.environ.get('A')\n"
        "b = os.environ['B']\n"
        "c = os.getenv('C')\n"
        "d = os.environ.setdefault('D', '4')\n"
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "m.py"
        path.write_text(code)
        assert sorted(_environ_reads(path)) == [5, 6, 7, 8]


def _names_read() -> set[str]:
    """Every variable named in a call of an environment reader of the product (the typed
    helpers of provenance.env and os.environ's own) or the detector's defaults."""
    names = set()
    paths = [*(ROOT / "provenance").rglob("*.py"), ROOT / "detector" / "defaults.py"]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func, first = node.func, node.args[0]
            helper = isinstance(func, ast.Name) and func.id.startswith("env_")
            environ = isinstance(func, ast.Attribute) and (
                _is_environ(func) or (func.attr == "get" and _is_environ(func.value))
            )
            if (helper or environ) and isinstance(first, ast.Constant):
                names.add(str(first.value))
    return names


def _names_listed() -> set[str]:
    # A variable whose empty value would override a default (the image's static root) is
    # listed commented out, "# NAME=", with what it does above it.
    return set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))


def test_env_example_lists_every_variable_the_product_reads():
    read, listed = _names_read(), _names_listed()
    assert len(read) > 100 and {"PROVENANCE_DEVICE", "PROVENANCE_HOST"} <= read
    assert read - listed == set()
    # And nothing more: a listed name that no code reads is a setting that does nothing,
    # save those of docker-compose.yml itself (its passwords and published port).
    compose = {"POSTGRES_PASSWORD", "REDIS_PASSWORD", "WEB_PORT"}
    assert listed - read == compose
    assert all(f"${{{name}" in (ROOT / "docker-compose.yml").read_text() for name in compose)


def _import_settings(**env: str) -> str:
    """stderr of a fresh interpreter importing the settings under ``env``."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import provenance.settings"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    return done.stderr


def test_organization_sign_in_without_its_endpoints_or_teams_fails_loudly():
    assert "PROVENANCE_OIDC_CLIENT_SECRET must be set" in _import_settings(
        PROVENANCE_OIDC_CLIENT_ID="app"
    )
    endpoints = {
        f"PROVENANCE_OIDC_{name}": "https://idp.example/x"
        for name in ("AUTHORIZATION_ENDPOINT", "TOKEN_ENDPOINT", "USERINFO_ENDPOINT")
    }
    complete = {
        "PROVENANCE_OIDC_CLIENT_ID": "app",
        "PROVENANCE_OIDC_CLIENT_SECRET": "s",
        "PROVENANCE_OIDC_JWKS_ENDPOINT": "https://idp.example/jwks",
        **endpoints,
    }
    assert "PROVENANCE_OIDC_TEAMS must map" in _import_settings(**complete)
    malformed = _import_settings(**complete, PROVENANCE_OIDC_TEAMS="teachers")
    assert "group=team pairs" in malformed
    assert _import_settings(**complete, PROVENANCE_OIDC_TEAMS="teachers=acme") == ""


def test_peer_organizations_are_bounded_and_well_formed_or_fail_loudly():
    many = ",".join(f"https://p{i}.example/.well-known/provenance.json" for i in range(9))
    assert "at most 8 peers" in _import_settings(PROVENANCE_PUBLIC_PEERS=many)
    assert "not an http(s) discovery URL" in _import_settings(
        PROVENANCE_PUBLIC_PEERS="file:///etc/passwd"
    )
    one = "https://p.example/.well-known/provenance.json"
    assert "names a peer twice" in _import_settings(PROVENANCE_PUBLIC_PEERS=f"{one},{one}")
    stray = _import_settings(
        PROVENANCE_PUBLIC_PEERS=one,
        PROVENANCE_PUBLIC_PEER_KEYS="https://q.example/.well-known/provenance.json=pvp_secret",
    )
    assert "URL=KEY pairs of configured peers" in stray and "pvp_secret" not in stray
    assert (
        _import_settings(
            PROVENANCE_PUBLIC_PEERS=one, PROVENANCE_PUBLIC_PEER_KEYS=f"{one}=pvp_secret"
        )
        == ""
    )


def test_json_log_lines_and_the_metrics_settings_fail_loudly_or_apply():
    import json
    import os
    import subprocess
    import sys

    assert "PROVENANCE_LOG_FORMAT must be plain or json" in _import_settings(
        PROVENANCE_LOG_FORMAT="xml"
    )
    assert "at least 16 characters" in _import_settings(PROVENANCE_METRICS_TOKEN="short")
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('provenance.test').warning('a line for %s', 'shippers')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "provenance.settings",
            "PROVENANCE_LOG_FORMAT": "json",
        },
        capture_output=True,
        text=True,
    )
    line = json.loads(done.stderr.strip().splitlines()[-1])
    assert line["message"] == "a line for shippers"
    assert line["levelname"] == "WARNING" and line["name"] == "provenance.test"


def test_the_reading_is_one_of_those_the_worker_knows():
    assert "PROVENANCE_READING must be ort-f32 or torch-f32 or ort-int8" in _import_settings(
        PROVENANCE_READING="tensorrt"
    )
    assert _import_settings(PROVENANCE_READING="TORCH-F32") == ""


def test_model_assistance_is_adaptive_unless_turned_off():
    assert _import_settings(PROVENANCE_MODEL_ASSIST="adaptive") == ""
    for raw, expected in (("", "adaptive"), ("1", "adaptive"), ("auto", "auto"), ("0", False)):
        os.environ["PV_ASSIST_MODE"] = raw
        try:
            assert project.env_model_assist("PV_ASSIST_MODE") == expected
        finally:
            del os.environ["PV_ASSIST_MODE"]


def test_the_product_settings_are_what_the_environment_module_reads():
    assert product.DATA_DIR == project.data_dir()
    assert product.PROVENANCE_READING == project.env_choice(
        "PROVENANCE_READING", ("ort-f32", "torch-f32", "ort-int8")
    )
