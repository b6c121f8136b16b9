"""Secrets stay out of error pages: the KEK and URLs with passwords are hidden from Django's
debug page and error mails; DEBUG and a published SECRET_KEY are refused outside the
embedded default."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest
from django.test import RequestFactory
from django.views.debug import ExceptionReporter

from tests.provenance.conftest import REPO

REDIS_PASSWORD = "redis-pass-" + secrets.token_hex(8)


def _error_page() -> str:
    # Raised and caught here: the traceback's frames hold no secret of the test's own.
    request = RequestFactory().get("/boom")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        return ExceptionReporter(request, *sys.exc_info()).get_traceback_html()


def test_the_debug_page_hides_the_kek_and_redis_passwords(settings):
    settings.DEBUG = True
    settings.PROVENANCE_KEK = kek = "kek-" + secrets.token_urlsafe(32)
    settings.REDIS_URL = f"redis://:{REDIS_PASSWORD}@redis.internal:6379/0"
    settings.CELERY_BROKER_URL = f"redis://default:{REDIS_PASSWORD}@redis.internal:6379/1"
    settings.PROVENANCE_CACHE_URL = f"rediss://cache:{REDIS_PASSWORD}@cache.internal:6380/0"
    settings.SOME_UPSTREAM = f"https://user:{REDIS_PASSWORD}@example.org/"  # any name
    settings.CACHES = {
        **settings.CACHES,
        "extra": {"BACKEND": "x", "LOCATION": f"redis://:{REDIS_PASSWORD}@h:1/0"},
    }
    page = _error_page()
    assert "PROVENANCE_KEK" in page and "REDIS_URL" in page  # the settings are listed
    assert kek not in page and REDIS_PASSWORD not in page


def _settings_import(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PROVENANCE_"))}
    clean.update(PYTHONPATH=str(REPO), **env)
    return subprocess.run(
        [sys.executable, "-c", "import provenance.settings"],
        env=clean,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


RANDOM_SECRET = secrets.token_urlsafe(50)


def test_production_settings_with_a_random_secret_load():
    assert (
        _settings_import(PROVENANCE_EMBEDDED="0", DJANGO_SECRET_KEY=RANDOM_SECRET).returncode == 0
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DJANGO_SECRET_KEY": "change-me-to-a-long-random-string"}, "placeholder"),
        ({"DJANGO_SECRET_KEY": "embedded-development-only-not-secret"}, "placeholder"),
        ({"DJANGO_SECRET_KEY": RANDOM_SECRET, "DJANGO_DEBUG": "1"}, "DJANGO_DEBUG=1 is refused"),
    ],
)
def test_production_refuses_debug_and_placeholder_secrets(env, message):
    result = _settings_import(PROVENANCE_EMBEDDED="0", **env)
    assert result.returncode != 0 and message in result.stderr


def test_the_embedded_default_may_debug():
    assert _settings_import(PROVENANCE_EMBEDDED="1", DJANGO_DEBUG="1").returncode == 0
