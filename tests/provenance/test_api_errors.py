"""The API's exception handler: service errors, a database outage and DRF's own errors all
become JSON answers with ``detail`` and a stable ``code``."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import OperationalError
from django.http import Http404
from rest_framework.exceptions import NotAuthenticated, Throttled, ValidationError

from provenance.api_errors import exception_handler
from provenance.errors import Conflict
from provenance.middleware import UNAVAILABLE


def test_a_service_error_answers_its_status_message_and_code():
    response = exception_handler(Conflict("the key is in use", code="key_in_use"), {})
    assert response.status_code == 409
    assert response.data == {"detail": "the key is in use", "code": "key_in_use"}


def test_a_database_outage_is_a_503_with_retry_after():
    response = exception_handler(OperationalError("database is locked"), {})
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.data == {"detail": UNAVAILABLE, "code": "unavailable"}
    assert "locked" not in str(response.data)  # the driver's message is not shown


def test_drf_errors_keep_their_answer_and_gain_a_code():
    throttled = exception_handler(Throttled(wait=7), {})
    assert throttled.status_code == 429 and throttled.data["code"] == "throttled"
    assert exception_handler(NotAuthenticated(), {}).data["code"] == "not_authenticated"
    assert exception_handler(Http404(), {}).data["code"] == "not_found"
    assert exception_handler(PermissionDenied(), {}).status_code == 403
    assert exception_handler(PermissionDenied(), {}).data["code"] == "permission_denied"


def test_a_validation_error_is_invalid_with_its_field_messages_kept():
    response = exception_handler(ValidationError({"text": ["This field is required."]}), {})
    assert response.status_code == 400 and response.data["code"] == "invalid"
    assert response.data["text"] == ["This field is required."]


def test_an_unknown_exception_is_left_to_django():
    assert exception_handler(RuntimeError("boom"), {}) is None


def test_over_http_an_error_answer_is_english_with_its_code(client):
    response = client.get("/api/v1/checks", HTTP_ACCEPT_LANGUAGE="fr")
    assert response.status_code in (401, 403)
    assert response.json()["code"] == "not_authenticated"
    assert "credentials were not provided" in response.json()["detail"]
