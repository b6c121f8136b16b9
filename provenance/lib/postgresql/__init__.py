"""Django's PostgreSQL backend with a health check that costs no round trip (``base``), and
the one place a database URL becomes a ``DATABASES`` entry that uses it."""

from __future__ import annotations

from typing import Any

import dj_database_url

ENGINE = "provenance.lib.postgresql"


def database_settings(url: str, conn_max_age: int) -> dict[str, Any]:
    """``DATABASES``' entry for ``url``: dj_database_url's, PostgreSQL on this backend, and a
    kept connection checked before a request or task reuses it (a database restart breaks
    every kept connection; unchecked, each would fail its next request with a 503 long after
    the database is back)."""
    config: dict[str, Any] = dict(
        dj_database_url.parse(url, conn_max_age=conn_max_age, conn_health_checks=True)
    )
    if config["ENGINE"] == "django.db.backends.postgresql":
        config["ENGINE"] = ENGINE
    return config
