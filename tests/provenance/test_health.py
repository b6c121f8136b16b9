"""The probes' endpoints (provenance/health.py): liveness answers without the database,
readiness names each check and fails with 503 when one fails, both answer a probe that sends
an unlisted Host (a pod's IP) over plain HTTP under the production transport settings, and
neither reveals a key, host name, URL or password. Every other path still meets the HTTPS
redirect and the Host check."""

from __future__ import annotations

import json

import pytest
from django.db import connections

from provenance import health
from provenance.keys.models import Tokenizer
from tests.provenance.conftest import point_celery_at

POD_IP = "10.244.3.17"
PROBE = {"HTTP_HOST": f"{POD_IP}:8000"}


@pytest.fixture(autouse=True)
def _fresh_probe_state(monkeypatch):
    monkeypatch.setattr(health, "_tokenizers_loaded", False)
    monkeypatch.setattr(health, "_last", None)


@pytest.fixture
def production_transport(settings):
    """Production's transport settings: an HTTPS redirect and one listed host name."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.ALLOWED_HOSTS = ["provenance.example.com"]


@pytest.fixture
def broker(redis_server):
    from provenance.celery import app

    previous = app.conf.broker_url
    point_celery_at(redis_server.url)
    yield redis_server
    point_celery_at(previous)


def test_liveness_answers_a_pod_ip_over_http_without_the_database(
    client, production_transport, django_assert_num_queries
):
    # No database access is allowed here (no django_db mark): a query would raise.
    response = client.get("/healthz", **PROBE)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"
    assert client.head("/healthz", **PROBE).status_code == 200


def test_other_paths_still_meet_the_host_check_and_the_redirect(client, production_transport):
    assert client.get("/accounts/login/", **PROBE).status_code == 400  # DisallowedHost
    redirect = client.get("/accounts/login/", HTTP_HOST="provenance.example.com")
    assert redirect.status_code == 301
    assert redirect["Location"].startswith("https://provenance.example.com/")
    # Only the exact paths are probes: nothing under them, no look-alike.
    for path in ("/healthz/", "/healthz/x", "/readyz.json", "/api/v1/healthz"):
        assert client.get(path, **PROBE).status_code == 400, path


def test_probes_take_only_get_and_head(client, production_transport):
    response = client.post("/readyz", **PROBE)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_readiness_checks_database_broker_and_loads_the_tokenizers(
    client, production_transport, broker, tokenizer_row
):
    from detector.text import tokenizers

    before = tokenizers._load.cache_info()
    response = client.get("/readyz", **PROBE)
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ready",
        "checks": {"database": "ok", "broker": "ok", "tokenizers": "ok"},
    }
    assert health._tokenizers_loaded
    # The registered tokenizer went through this process's loader (from its cache or disk).
    after = tokenizers._load.cache_info()
    assert after.hits + after.misses > before.hits + before.misses


@pytest.mark.django_db
def test_readiness_fails_with_503_naming_an_unreachable_broker_and_nothing_else(
    client, production_transport, tokenizer_row, caplog
):
    from provenance.celery import app

    previous = app.conf.broker_url
    secret_url = "redis://:hunter2-broker-password@127.0.0.1:1/0"
    point_celery_at(secret_url)
    try:
        response = client.get("/readyz", **PROBE)
    finally:
        point_celery_at(previous)
    assert response.status_code == 503
    body = response.json()
    assert body == {
        "status": "unavailable",
        "checks": {"database": "ok", "broker": "failed", "tokenizers": "ok"},
    }
    for secret in ("hunter2", "127.0.0.1", ":1/"):
        assert secret not in response.content.decode()
        assert secret not in caplog.text
    assert "readiness check broker failed" in caplog.text


def test_readiness_fails_when_the_database_cannot_be_used(client, production_transport, broker):
    # No django_db mark: every query raises, as with a database that is down.
    response = client.get("/readyz", **PROBE)
    assert response.status_code == 503
    assert response.json()["checks"] == {
        "database": "failed",
        "broker": "ok",
        "tokenizers": "skipped",
    }


@pytest.mark.django_db
def test_readiness_names_no_key_or_tokenizer(client, broker, alice_key):
    Tokenizer.objects.create(
        name="secret-tokenizer-name",
        source_kind=Tokenizer.Source.HF_DIR,
        source_path="/nonexistent/secret-tokenizer-dir",
        content_hash="0" * 64,
        vocab_size=1,
    )
    response = client.get("/readyz")
    text = response.content.decode()
    # A tokenizer that cannot load is left to the requests that name it, as preload does.
    assert response.status_code == 200
    assert set(json.loads(text)["checks"]) == {"database", "broker", "tokenizers"}
    for secret in (alice_key.name, "secret-tokenizer", "nonexistent", "acme"):
        assert secret not in text


@pytest.mark.django_db
def test_readiness_is_reused_for_a_second_and_then_checked_again(client, broker, monkeypatch):
    calls = []
    monkeypatch.setitem(health.CHECKS, "database", lambda: calls.append(1))
    client.get("/readyz")
    client.get("/readyz")
    assert len(calls) == 1
    monkeypatch.setattr(health, "READY_TTL", 0.0)
    client.get("/readyz")
    assert len(calls) == 2
    connections["default"].close()
