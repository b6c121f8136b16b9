"""Settings come from the environment through typed helpers that fail loudly."""

from __future__ import annotations

import pytest

from provenance import settings as project


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


def test_env_example_lists_every_variable_the_product_reads():
    import re
    from pathlib import Path

    root = Path(project.__file__).resolve().parent
    pattern = re.compile(r"(?:env_\w+|os\.environ\.get|os\.environ\.setdefault)\(\s*\"([A-Z_]+)\"")
    read = {name for path in root.rglob("*.py") for name in pattern.findall(path.read_text())}
    # A variable whose empty value would override a default (the image's static root) is
    # listed commented out, "# NAME=", with what it does above it.
    listed = set(
        re.findall(r"^(?:# )?([A-Z_]+)=", (root.parent / ".env.example").read_text(), re.M)
    )
    internal = {"DJANGO_SETTINGS_MODULE", "X_TEST"}  # set by manage.py / by the tests
    assert len(read) > 30 and read - internal - listed == set()
    assert {"PROVENANCE_GENERATOR_URL", "PROVENANCE_PLAYGROUND_MAX_TOKENS"} <= listed


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


def test_the_reading_runtime_is_one_of_those_the_worker_knows():
    assert "PROVENANCE_ASSIST_RUNTIME must be one of torch, onnxruntime" in _import_settings(
        PROVENANCE_ASSIST_RUNTIME="tensorrt"
    )
    assert _import_settings(PROVENANCE_ASSIST_RUNTIME="ONNXRuntime") == ""
