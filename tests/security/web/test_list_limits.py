"""Lists are counted before their elements are read: ``token_ids`` of a stream append and an
audit's ``texts`` past their limits are refused with 413 at once, not after a check of every
element (a body of millions of items would cost that many validations first)."""

from __future__ import annotations

import pytest
from rest_framework import serializers

pytestmark = pytest.mark.django_db


def _stream(client) -> str:
    response = client.post("/api/v1/streams", {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.fixture
def element_checks(monkeypatch):
    """How many list elements the API validated."""
    seen = {"count": 0}
    for field in (serializers.IntegerField, serializers.DictField):
        original = field.to_internal_value

        def counting(self, data, _original=original):
            seen["count"] += 1
            return _original(self, data)

        monkeypatch.setattr(field, "to_internal_value", counting)
    return seen


def test_too_many_token_ids_are_refused_before_any_is_read(
    api_for, alice_key, settings, element_checks
):
    settings.PROVENANCE_STREAM_MAX_TOKENS = 1000
    client = api_for("alice")
    stream_id = _stream(client)
    body = {"token_ids": ["not an id"] + [1] * 1000}  # 1,001 ids, the first malformed
    response = client.post(f"/api/v1/streams/{stream_id}/append", body, format="json")
    assert response.status_code == 413, response.content
    assert "at most 1000 tokens" in response.json()["detail"]
    assert element_checks["count"] == 0


def test_too_many_audit_texts_are_refused_before_any_is_read(
    api_for, alice_key, settings, element_checks
):
    settings.PROVENANCE_MAX_AUDIT_TEXTS = 50
    body = {"texts": ["not an object"] + [{"text": "x"}] * 50}
    response = api_for("alice").post("/api/v1/audits", body, format="json")
    assert response.status_code == 413, response.content
    assert "at most 50 texts; got 51" in response.json()["detail"]
    assert element_checks["count"] == 0


def test_lists_within_the_limits_are_still_checked_element_by_element(api_for, alice_key):
    client = api_for("alice")
    stream_id = _stream(client)
    bad = client.post(f"/api/v1/streams/{stream_id}/append", {"token_ids": [1, -1]}, format="json")
    assert bad.status_code == 400
    refused = client.post("/api/v1/audits", {"texts": [{"text": "x"}, "y"]}, format="json")
    assert refused.status_code == 400
