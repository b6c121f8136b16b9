"""Health endpoints for compose healthchecks, Kubernetes probes and load balancers.

``GET /healthz`` (liveness) answers 200 ``{"status": "ok"}`` when the process answers: no
database, broker or cache is touched, so a database outage never gets a healthy web process
restarted. ``GET /readyz`` (readiness) answers 200 ``{"status": "ready", "checks": {...}}``
when the database answers a query, the broker accepts a connection and this process has
loaded the registered tokenizers, else 503 with ``"status": "unavailable"`` and the check
that failed marked ``"failed"``. The answers name the checks only: no key or tokenizer
names, host names, URLs or error messages (the log says which exception, by type).

``HealthProbeMiddleware`` is the first middleware: it answers exactly these two paths, for GET
and HEAD, before ``SecurityMiddleware``'s HTTPS redirect and before anything reads the Host
header, so a probe that sends the pod's IP as its Host, over plain HTTP, is answered. Every
other path goes on through the stack unchanged (ALLOWED_HOSTS, the redirect, CSRF...).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

# Seconds a readiness answer is reused within one process: probes from many sources (the
# kubelet, a load balancer's nodes) cost at most one round of checks a second.
READY_TTL = 1.0
# Seconds the broker check waits for a connection.
BROKER_TIMEOUT = 2

_tokenizers_lock = threading.Lock()
_tokenizers_loaded = False
_last: tuple[float, dict[str, str]] | None = None
_last_lock = threading.Lock()


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_broker() -> None:
    from provenance.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT)


def check_tokenizers() -> None:
    """Load every registered tokenizer and its n-gram table into this process, once (a
    tokenizer that cannot be loaded is logged by the loader and left to the request that
    names it); later calls return at once."""
    global _tokenizers_loaded
    if _tokenizers_loaded:
        return
    with _tokenizers_lock:
        if _tokenizers_loaded:
            return
        from provenance.checks.services.warmup import tokenizers_load

        for loaded in tokenizers_load():
            loaded.ngram_table  # noqa: B018
        _tokenizers_loaded = True


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "broker": check_broker,
    "tokenizers": check_tokenizers,
}


def run_checks() -> dict[str, str]:
    """Each check's outcome, "ok" or "failed"; a check after a failed database is skipped
    ("skipped") when it needs the database."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        if name == "tokenizers" and results.get("database") != "ok":
            results[name] = "skipped"
            continue
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - any failure makes the process unready
            logger.warning("readiness check %s failed: %s", name, type(exc).__name__)
            results[name] = "failed"
        else:
            results[name] = "ok"
    return results


def _cached_checks() -> dict[str, str]:
    global _last
    now = time.monotonic()
    with _last_lock:
        if _last is not None and now - _last[0] < READY_TTL:
            return _last[1]
        results = run_checks()
        _last = (time.monotonic(), results)
        return results


def _answer(body: dict[str, object], status: int) -> HttpResponse:
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def liveness(request: HttpRequest) -> HttpResponse:
    return _answer({"status": "ok"}, 200)


def readiness(request: HttpRequest) -> HttpResponse:
    checks = _cached_checks()
    ready = all(outcome == "ok" for outcome in checks.values())
    return _answer(
        {"status": "ready" if ready else "unavailable", "checks": checks}, 200 if ready else 503
    )


PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": liveness,
    "/readyz": readiness,
}


class HealthProbeMiddleware:
    """Answers ``/healthz`` and ``/readyz`` ahead of the rest of the stack (module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = _answer({"detail": "method not allowed"}, 405)
            response["Allow"] = "GET, HEAD"
            return response
        response = probe(request)
        if request.method == "HEAD":
            response.content = b""
        return response
