"""Cross-cutting HTTP behaviour: the content security policy on every answer, a 503 (JSON for
the API, a page otherwise) when the database is down, and API answers in English."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import translation

from provenance.middleware import (
    UNAVAILABLE,
    ApiInEnglishMiddleware,
    ContentSecurityPolicyMiddleware,
    DatabaseUnavailableMiddleware,
    unavailable_response,
)

factory = RequestFactory()


def test_every_answer_carries_the_policy_unless_a_view_set_its_own():
    plain = ContentSecurityPolicyMiddleware(lambda request: HttpResponse("ok"))
    assert plain(factory.get("/"))["Content-Security-Policy"] == settings.CONTENT_SECURITY_POLICY

    def own(request):
        response = HttpResponse("ok")
        response["Content-Security-Policy"] = "default-src 'none'"
        return response

    assert ContentSecurityPolicyMiddleware(own)(factory.get("/"))["Content-Security-Policy"] == (
        "default-src 'none'"
    )


def test_the_policy_is_served_on_a_real_page(client):
    assert "script-src 'self'" in client.get("/accounts/login/")["Content-Security-Policy"]


@pytest.mark.parametrize("error", [OperationalError("locked"), InterfaceError("closed")])
def test_a_database_error_is_a_503_json_for_the_api(error, caplog):
    middleware = DatabaseUnavailableMiddleware(lambda request: HttpResponse())
    with caplog.at_level(logging.WARNING, logger="provenance.middleware"):
        response = middleware.process_exception(factory.post("/api/v1/checks"), error)
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response["Content-Type"] == "application/json"
    assert response.content.decode() == f'{{"detail": "{UNAVAILABLE}"}}'
    assert "POST /api/v1/checks" in caplog.text and type(error).__name__ in caplog.text


def test_a_database_error_on_a_page_is_an_html_503():
    response = unavailable_response(factory.get("/checks/"))
    assert response.status_code == 503 and response["Content-Type"].startswith("text/html")
    assert "Service unavailable" in response.content.decode()
    assert unavailable_response(factory.post("/detect")).status_code == 503
    assert unavailable_response(factory.post("/detect"))["Content-Type"] == "application/json"


def test_other_errors_are_not_handled_here():
    middleware = DatabaseUnavailableMiddleware(lambda request: HttpResponse())
    assert middleware.process_exception(factory.get("/"), ValueError("x")) is None


@pytest.mark.parametrize(
    ("path", "english"),
    [("/api/v1/checks", True), ("/detect", True), ("/.well-known/x", True), ("/checks/", False)],
)
def test_api_paths_are_answered_in_english(path, english):
    seen = {}

    def view(request):
        seen["language"] = translation.get_language()
        return HttpResponse()

    with translation.override("fr"):
        request = factory.get(path)
        request.LANGUAGE_CODE = "fr"
        ApiInEnglishMiddleware(view)(request)
    assert (seen["language"] == "en") is english
    assert (request.LANGUAGE_CODE == "en") is english
