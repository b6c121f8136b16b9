"""The WSGI application answers a request as gunicorn would call it."""

from __future__ import annotations

import io

import pytest

from provenance.wsgi import application


@pytest.mark.django_db
def test_the_application_serves_the_login_page():
    status: list[str] = []
    headers: list[tuple[str, str]] = []

    def start_response(line, response_headers, exc_info=None):
        status.append(line)
        headers.extend(response_headers)

    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/accounts/login/",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": io.StringIO(),
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    body = b"".join(application(environ, start_response))
    assert status == ["200 OK"]
    assert dict(headers)["Content-Security-Policy"].startswith("default-src 'self'")
    assert b"<form" in body
