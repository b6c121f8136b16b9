"""Everything the product says while the suite runs, for the secret scan (test_secret_scan).

Installed once per session (tests/provenance/conftest.py): a middleware that keeps every
response body (pages, API answers, streams; both the test client and the live server), a
logging handler that keeps every formatted record with its exception text, Celery's
before_task_publish signal for every message body, and the log files of the processes the
tests start. The key values created in this process are recorded where they are parsed.

The answers that show a new key its one time are exempt: a POST that creates or rotates a
key (API or admin), recognised by the page the admin renders or the API's 201 with "value".
"""

from __future__ import annotations

import base64
import json
import logging
import logging.config
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.http import HttpRequest, HttpResponse

files: list[Path] = []
texts: list[tuple[str, str]] = []
key_values: set[int] = set()
exempt: list[str] = []  # labels of the shown-once answers (for the scan's own checks)

_SHOWN_ONCE = re.compile(r"^/(api/v1/keys(/[^/]+/rotate)?|admin/keys/watermarkkey/.*)$")


def record(label: str, text: str) -> None:
    texts.append((label, text))


def _shows_a_new_key(request: HttpRequest, response: HttpResponse) -> bool:
    if request.method != "POST" or not _SHOWN_ONCE.match(request.path):
        return False
    template = getattr(response, "template_name", "") or ""
    return response.status_code == 201 or "key_created" in str(template)


class CaptureMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        label = f"{request.method} {request.get_full_path()} -> {response.status_code}"
        if _shows_a_new_key(request, response):
            exempt.append(label)
            return response
        headers = "\n".join(f"{k}: {v}" for k, v in response.items())
        if response.streaming:
            response.streaming_content = _tee(label, headers, response.streaming_content)
        else:
            if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                response.render()
            record(label, headers + "\n" + response.content.decode("utf-8", "replace"))
        return response


def _tee(label: str, headers: str, chunks: Iterable[Any]) -> Iterator[Any]:
    seen: list[str] = [headers]
    inner = iter(chunks)
    try:
        for chunk in inner:
            seen.append(
                chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else str(chunk)
            )
            yield chunk
    finally:
        close = getattr(inner, "close", None)
        if close is not None:
            close()  # the client left: the product's stream must see it as before
        record(label, "".join(seen))


class _Handler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = logging.Formatter("%(levelname)s %(name)s %(message)s").format(record)
        except Exception:  # a record that cannot be formatted is still scanned raw
            text = f"{record.msg!r} {record.args!r}"
        texts.append((f"log {record.name}", text))


def _on_publish(sender: Any = None, body: Any = None, headers: Any = None, **_: Any) -> None:
    record(f"celery {sender}", json.dumps([body, headers], default=str))


def install(settings: Any) -> None:
    settings.MIDDLEWARE = ["tests.provenance.capture.CaptureMiddleware", *settings.MIDDLEWARE]
    handler = _Handler(level=logging.DEBUG)
    logging.getLogger().addHandler(handler)
    _keep_on_reconfiguration(handler)
    from celery.signals import before_task_publish

    before_task_publish.connect(_on_publish, weak=False)
    _record_parsed_keys()


def _keep_on_reconfiguration(handler: logging.Handler) -> None:
    """Django configures logging again whenever it is set up again (``get_wsgi_application``,
    a runner's ``django.setup()`` in this process) and the product's LOGGING names a root
    logger, which drops every root handler: the capture handler is put back each time."""
    configure = logging.config.dictConfig

    def dict_config(config: dict[str, Any]) -> None:
        configure(config)
        if handler not in logging.getLogger().handlers:
            logging.getLogger().addHandler(handler)

    logging.config.dictConfig = dict_config  # Django looks the function up by name each time


def _record_parsed_keys() -> None:
    from provenance.keys import admin, services

    parse = services.parse_key_value

    def recording(raw: Any) -> int:
        value = parse(raw)
        key_values.add(value)
        return value

    services.parse_key_value = recording  # key_create and the admin form call it by name
    admin.services = services


def forms(value: int) -> set[str]:
    """The spellings a leaked key could take: decimal, hex, base64 of its 8 bytes. (Its
    32-bit words are left out here: 8 hex digits turn up by chance among the many UUIDs,
    tokens and hashes a whole suite produces; test_secrets scans the session key's words.)"""
    found = {str(value), f"{value:x}", f"{value:016x}"}
    for order in ("big", "little"):
        raw = value.to_bytes(8, order)
        found |= {
            base64.b64encode(raw).decode().rstrip("="),
            base64.urlsafe_b64encode(raw).decode().rstrip("="),
        }
    return found


def scanned(values: Iterable[int]) -> list[int]:
    """Values worth looking for: small ones are test fixtures (value=5), not secrets."""
    return sorted(v for v in values if v >= 1 << 48)


def leaks(text: str, values: Iterable[int]) -> list[str]:
    lowered = text.lower()
    return [form for value in values for form in forms(value) if form.lower() in lowered]
