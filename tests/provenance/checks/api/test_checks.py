"""REST API: every route, every bad input, and cross-team isolation (charlie sees nothing).
Scoring is run in-process where a test needs results; the worker tests cover the queue."""

from __future__ import annotations

import json
import uuid

import pytest
from rest_framework.test import APIClient

from provenance.checks.api.checks import CheckDetailOutput, CheckTokensOutput
from provenance.checks.models import Check
from provenance.checks.services import check_score
from provenance.keys.services import key_retire
from tests.provenance.conftest import KEY_VALUE


@pytest.fixture
def alice(api_for):
    return api_for("alice")


def _post_check(client, text, **extra):
    return client.post("/api/v1/checks", {"text": text, **extra}, format="json")


def test_posting_a_check_answers_202_with_a_pending_check(alice, alice_key, wm_text):
    response = _post_check(alice, wm_text)
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "pending" and body["text"] == wm_text
    assert response["Location"] == f"/api/v1/checks/{body['id']}"


def test_a_scored_check_reads_back_with_hypotheses_and_heatmap(alice, alice_key, wm_text):
    check_id = _post_check(alice, wm_text).json()["id"]
    check_score(check_id)
    body = alice.get(f"/api/v1/checks/{check_id}").json()
    assert body["status"] == "done" and body["is_watermarked"] is True
    assert body["best_key"] == "acme-main" and body["num_hypotheses"] == 1
    assert body["hypotheses"][0]["key_id"] == str(alice_key.id)
    assert "heatmap" not in body  # per-token data only when asked for: the detail stays small
    assert set(CheckDetailOutput.Meta.fields) <= set(body)
    body = alice.get(f"/api/v1/checks/{check_id}?tokens=1").json()
    assert set(CheckTokensOutput.Meta.fields) <= set(body)
    assert len(body["heatmap"]["scores"]) == body["num_tokens"]


def test_checks_list_is_paginated(alice, alice_key):
    for i in range(3):
        _post_check(alice, f"text number {i}")
    body = alice.get("/api/v1/checks?limit=2").json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]


def test_bob_sees_alices_checks_and_charlie_does_not(api_for, alice_key, wm_text):
    check_id = _post_check(api_for("alice"), wm_text).json()["id"]
    assert api_for("bob").get(f"/api/v1/checks/{check_id}").status_code == 200
    charlie = api_for("charlie")
    assert charlie.get(f"/api/v1/checks/{check_id}").status_code == 404
    assert charlie.get("/api/v1/checks").json()["count"] == 0


def test_charlie_cannot_use_or_see_alices_private_key(api_for, alice_key, wm_text):
    charlie = api_for("charlie")
    assert charlie.get("/api/v1/keys").json()["count"] == 0
    assert charlie.get(f"/api/v1/keys/{alice_key.id}").status_code == 404
    response = _post_check(charlie, wm_text, key_ids=[alice_key.id])
    assert response.status_code == 400 and "unknown key" in response.json()["detail"]
    assert response_detect(charlie, wm_text).status_code == 400  # no keys at all


def response_detect(client, text):
    return client.post("/detect", {"text": text}, format="json")


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"text": ""}, 400, "empty"),
        ({"text": "   "}, 400, "empty"),
        ({}, 400, "text"),
        ({"text": 5}, 400, "string"),
        ({"text": "ok", "key_ids": []}, 400, "key_ids"),
        ({"text": "ok", "key_ids": ["x"]}, 400, "key_ids"),
        ({"text": "ok", "key_ids": [str(uuid.uuid4())]}, 400, "unknown key"),
    ],
)
def test_bad_check_bodies_get_a_clear_4xx(alice, alice_key, body, status, fragment):
    response = alice.post("/api/v1/checks", body, format="json")
    assert response.status_code == status
    assert fragment in json.dumps(response.json())
    assert Check.objects.count() == 0


def test_a_retired_key_may_be_named(alice, alice_key):
    assert alice.post(f"/api/v1/keys/{alice_key.id}/retire").status_code == 403  # no permission
    key_retire(key=alice_key)
    response = _post_check(alice, "some text", key_ids=[alice_key.id])
    assert response.status_code in (201, 202), response.content
    assert Check.objects.get(id=response.json()["id"]).key_ids == [str(alice_key.id)]


def test_a_text_over_the_limit_gets_413(alice, alice_key, settings):
    settings.PROVENANCE_MAX_TEXT_BYTES = 100
    response = _post_check(alice, "x" * 101)
    assert response.status_code == 413 and "limit" in response.json()["detail"]
    assert Check.objects.count() == 0


def test_invalid_utf8_gets_400(alice, alice_key):
    body = b'{"text": "caf\xe9 au lait"}'
    response = alice.generic("POST", "/api/v1/checks", body, content_type="application/json")
    assert response.status_code == 400 and Check.objects.count() == 0


def test_a_lone_surrogate_gets_400(alice, alice_key):
    body = b'{"text": "bad \\ud800 text"}'
    response = alice.generic("POST", "/api/v1/checks", body, content_type="application/json")
    assert response.status_code == 400 and Check.objects.count() == 0
    assert "U+D800" in json.dumps(response.json())  # the character named, as DRF names it
    fine = alice.generic(  # an astral character (a surrogate pair in JSON) is no surrogate
        "POST", "/api/v1/checks", b'{"text": "ok \\ud83d\\ude00 text"}', "application/json"
    )
    assert fine.status_code in (201, 202)


def test_malformed_json_gets_400(alice, alice_key):
    response = alice.generic(
        "POST", "/api/v1/checks", b'{"text": ', content_type="application/json"
    )
    assert response.status_code == 400 and "JSON" in response.json()["detail"]


def test_anonymous_callers_get_401(alice_key):
    client = APIClient()
    for method, url in [("post", "/api/v1/checks"), ("get", "/api/v1/audits"), ("post", "/detect")]:
        assert getattr(client, method)(url, {}, format="json").status_code == 401


def test_session_auth_works_for_the_api(client, cast, alice_key):
    client.force_login(cast["alice"])
    response = client.post("/api/v1/checks", {"text": "hello"}, content_type="application/json")
    assert response.status_code == 202


# --- /detect (vLLM example server drop-in) ---------------------------------------------


# --- audits -------------------------------------------------------------------------------


# --- keys ---------------------------------------------------------------------------------


def test_keys_list_shows_configuration_but_never_the_value(alice, alice_key):
    body = alice.get("/api/v1/keys").json()
    assert body["count"] == 1
    key = body["results"][0]
    assert key["name"] == "acme-main" and key["tokenizer"] == "SmolLM2-135M"
    assert "value" not in key and "encrypted_value" not in key
    assert str(KEY_VALUE) not in json.dumps(body)


def test_creating_a_key_needs_the_permission_and_shows_the_value_once(api_for, cast, alice_key):
    from django.contrib.auth.models import Permission

    alice = api_for("alice")
    assert alice.post("/api/v1/keys", {"name": "k2"}, format="json").status_code == 403
    perms = Permission.objects.filter(codename__in=["add_watermarkkey", "change_watermarkkey"])
    cast["alice"].user_permissions.add(*perms)
    created = alice.post("/api/v1/keys", {"name": "k2", "value": "0x2a"}, format="json")
    assert created.status_code == 201 and created.json()["value"] == "42"
    fetched = alice.get(f"/api/v1/keys/{created.json()['id']}").json()
    assert "value" not in fetched
    rotated = alice.post(f"/api/v1/keys/{alice_key.id}/rotate")
    assert rotated.status_code == 201 and rotated.json()["value"] != str(KEY_VALUE)
    assert alice.get(f"/api/v1/keys/{alice_key.id}").json()["status"] == "retired"


def test_bad_key_values_are_refused(api_for, cast, alice_key):
    from django.contrib.auth.models import Permission

    cast["alice"].user_permissions.add(Permission.objects.get(codename="add_watermarkkey"))
    alice = api_for("alice")
    for value in ["-1", str(2**64), "zz"]:
        assert (
            alice.post("/api/v1/keys", {"name": "k", "value": value}, format="json").status_code
            == 400
        )


# --- schema and docs ----------------------------------------------------------------------


def test_the_openapi_schema_lists_every_route(alice):
    response = alice.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = set(json.loads(response.content)["paths"])
    assert {"/api/v1/checks", "/api/v1/audits", "/detect", "/api/v1/keys"} <= paths


def test_the_docs_page_uses_local_assets_only(client, cast):
    client.force_login(cast["alice"])
    page = client.get("/api/docs/").content.decode()
    assert "cdn" not in page.lower() and "/static/drf_spectacular_sidecar/" in page


def test_throttling_is_per_user(api_for, alice_key, monkeypatch):
    from django.core.cache import cache
    from rest_framework.throttling import UserRateThrottle

    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "2/min", "detect": "5/min"})
    cache.clear()
    alice, bob = api_for("alice"), api_for("bob")
    codes = [alice.get("/api/v1/checks").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert bob.get("/api/v1/checks").status_code == 200
    cache.clear()


# --- the history's filters -----------------------------------------------------------------


def test_the_list_filters_like_the_history_page(alice, cast, alice_key):
    from tests.provenance.checks.test_filters import history_row

    marked = history_row(cast["alice"], verdict="watermarked", key=alice_key, filename="a.pdf")
    old = history_row(cast["bob"], verdict="watermarked", days_ago=30, client_id="row-9")
    history_row(cast["bob"], verdict="inconclusive", key=alice_key)
    history_row(cast["charlie"], verdict="watermarked", filename="a.pdf")

    def ids(**query):
        body = alice.get("/api/v1/checks", query).json()
        return {item["id"] for item in body["results"]}

    assert ids(verdict="watermarked") == {str(marked.id), str(old.id)}
    assert ids(verdict="watermarked", since="2026-11-01") == {str(marked.id)}
    assert ids(until="2026-10-31") == {str(old.id)}
    assert ids(verdict="watermarked", key_id=str(alice_key.id)) == {str(marked.id)}
    assert ids(q="a.pdf") == {str(marked.id)} and ids(q="ROW-9") == {str(old.id)}
    assert ids(q=str(old.id)) == {str(old.id)}
    page = alice.get("/api/v1/checks", {"verdict": "watermarked", "limit": 1}).json()
    assert page["count"] == 2 and len(page["results"]) == 1 and "offset=1" in page["next"]


def test_a_bad_filter_answers_400_naming_the_parameter(alice, cast, alice_key):
    for query, field in [
        ({"verdict": "maybe"}, "verdict"),
        ({"since": "yesterday"}, "since"),
        ({"key_id": str(uuid.uuid4())}, "key_id"),
        ({"submitter": "bob"}, "submitter"),  # alice is no team admin
    ]:
        response = alice.get("/api/v1/checks", query)
        assert response.status_code == 400, query
        body = response.json()
        assert body["code"] == "invalid" and field in body, body


def test_a_team_admin_filters_the_list_by_submitter(alice, cast):
    from provenance.accounts.models import Membership
    from tests.provenance.checks.test_filters import history_row

    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    bobs = history_row(cast["bob"], verdict="watermarked")
    history_row(cast["alice"], verdict="watermarked")
    body = alice.get("/api/v1/checks", {"submitter": "bob"}).json()
    assert [item["id"] for item in body["results"]] == [str(bobs.id)]


def test_options_describes_the_submission(alice):
    response = alice.options("/api/v1/checks")
    assert response.status_code == 200
    assert {"text", "file", "key_ids"} <= set(response.json()["actions"]["POST"])


def test_the_schema_documents_the_list_filters_and_its_pages(alice):
    schema = json.loads(alice.get("/api/schema/?format=json").content)
    listing = schema["paths"]["/api/v1/checks"]["get"]
    parameters = {p["name"]: p for p in listing["parameters"]}
    assert {"verdict", "since", "until", "key_id", "submitter", "q", "limit", "offset"} <= set(
        parameters
    )
    assert parameters["verdict"]["schema"]["enum"] == sorted(
        ["watermarked", "not_watermarked", "inconclusive"]
    )
    assert parameters["since"]["schema"]["format"] == "date"
    assert parameters["key_id"]["schema"]["format"] == "uuid"
    answer = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert answer.endswith("/PaginatedCheckSummaryOutputList")
