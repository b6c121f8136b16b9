"""Every body is an allowlist, all the way down, read by one parser for the whole API.

Proven on the code before: a field inside an audit item (an item-level ``key_ids``, a
misspelled ``clientid``) was dropped in silence; a route that takes no body ignored one
(``POST /api/v1/keys/{id}/rotate {"value": "42", "shared": true}`` answered 201 with a fresh
random, unshared key); a JSON object naming a key twice was read with the last value winning,
so two readers of one body (a proxy, a log, this API) could disagree about what it said."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import URLPattern, URLResolver, get_resolver
from knox.models import AuthToken
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from provenance.audits.models import Audit
from provenance.checks.models import Check
from provenance.keys.models import WatermarkKey
from provenance.streams.models import Stream

pytestmark = pytest.mark.django_db


def _refused(response, *names):
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid", body
    for name in names:
        assert name in body["detail"], body


def _raw(client, url, body: str, **extra):
    return client.generic("POST", url, body.encode(), content_type="application/json", **extra)


# Fields inside audit items.


def test_an_audit_item_naming_its_own_key_ids_is_refused(api_for, alice_key):
    body = {"texts": [{"client_id": "a", "text": "a text", "key_ids": [str(alice_key.id)]}]}
    _refused(api_for("alice").post("/api/v1/audits", body, format="json"), "texts[0].key_ids")
    assert Audit.objects.count() == 0 and Check.objects.count() == 0


def test_an_audit_item_with_a_misspelled_client_id_is_refused(api_for, alice_key):
    texts = [{"client_id": "a", "text": "one"}, {"clientid": "b", "text": "two"}]
    response = api_for("alice").post("/api/v1/audits", {"texts": texts}, format="json")
    _refused(response, "texts[1].clientid")
    assert Audit.objects.count() == 0


# Routes that take no body.


def _may_manage_keys(cast):
    codenames = ["add_watermarkkey", "change_watermarkkey"]
    cast["alice"].user_permissions.add(*Permission.objects.filter(codename__in=codenames))


def test_rotate_refuses_a_body_instead_of_ignoring_it(api_for, cast, alice_key):
    _may_manage_keys(cast)
    url = f"/api/v1/keys/{alice_key.id}/rotate"
    response = api_for("alice").post(url, {"value": "42", "shared": True}, format="json")
    _refused(response, "shared", "value")
    assert WatermarkKey.objects.count() == 1
    alice_key.refresh_from_db()
    assert alice_key.status == WatermarkKey.Status.ACTIVE
    # The same route without a body still rotates.
    assert api_for("alice").post(url).status_code == 201


def test_retire_refuses_a_body(api_for, cast, alice_key):
    _may_manage_keys(cast)
    response = api_for("alice").post(
        f"/api/v1/keys/{alice_key.id}/retire", {"reason": "x"}, format="json"
    )
    _refused(response, "reason")
    alice_key.refresh_from_db()
    assert alice_key.status == WatermarkKey.Status.ACTIVE


def test_token_revocation_refuses_a_body(api_for, cast):
    alice = api_for("alice")
    _refused(alice.post("/api/v1/token/revoke", {"all": True}, format="json"), "all")
    assert AuthToken.objects.filter(user=cast["alice"]).count() == 1
    assert alice.get("/api/v1/checks").status_code == 200


def test_a_delete_with_a_body_is_refused_and_deletes_nothing(api_for, alice_key):
    alice = api_for("alice")
    check = alice.post("/api/v1/checks", {"text": "a text"}, format="json").json()["id"]
    response = alice.delete(f"/api/v1/checks/{check}", {"purge": "all"}, format="json")
    _refused(response, "purge")
    assert Check.objects.filter(id=check).exists()


def test_a_body_too_large_to_read_on_a_route_without_one_is_refused_unread(
    api_for, cast, alice_key
):
    _may_manage_keys(cast)
    body = '{"x": "' + "a" * 100_000 + '"}'
    response = _raw(api_for("alice"), f"/api/v1/keys/{alice_key.id}/retire", body)
    assert response.status_code == 400 and "takes no body" in response.json()["detail"]


# Duplicate keys.


def test_a_check_naming_text_twice_is_refused(api_for, alice_key):
    response = _raw(api_for("alice"), "/api/v1/checks", '{"text": "mine", "text": "theirs"}')
    _refused(response, "duplicate", "text")
    assert Check.objects.count() == 0


def test_a_duplicate_key_inside_an_audit_item_is_refused(api_for, alice_key):
    body = '{"texts": [{"client_id": "a", "client_id": "b", "text": "one"}]}'
    _refused(_raw(api_for("alice"), "/api/v1/audits", body), "duplicate", "client_id")
    assert Audit.objects.count() == 0


def test_detect_and_streams_refuse_duplicate_keys(api_for, alice_key):
    alice = api_for("alice")
    _refused(_raw(alice, "/detect", '{"text": "a", "text": "b"}'), "duplicate", "text")
    _refused(_raw(alice, "/api/v1/streams", '{"key_ids": [], "key_ids": null}'), "key_ids")
    assert Stream.objects.count() == 0


def test_public_verification_refuses_duplicate_keys(client):
    response = client.generic(
        "POST",
        "/api/public/v1/verify",
        b'{"text": "one", "text": "two"}',
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert "duplicate" in response.json()["detail"] and "text" in response.json()["detail"]


def test_a_multipart_part_sent_twice_is_refused(api_for, alice_key):
    boundary = "XyZ"
    parts = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="text"\r\n\r\n{value}\r\n'
        for value in ("mine", "theirs")
    )
    response = api_for("alice").generic(
        "POST",
        "/api/v1/checks",
        (parts + f"--{boundary}--\r\n").encode(),
        content_type=f"multipart/form-data; boundary={boundary}",
    )
    _refused(response, "text")
    assert Check.objects.count() == 0


# One parser for the whole API.


def _drf_views(resolver=None):
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from _drf_views(entry)
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "cls", None)
            if isinstance(view, type) and issubclass(view, APIView):
                yield entry.pattern, view


def test_every_api_view_reads_its_body_through_the_one_parser():
    from provenance import api_input

    views = list(_drf_views())
    assert len(views) >= 15
    assert api_settings.DEFAULT_PARSER_CLASSES == list(api_input.PARSERS)
    for pattern, view in views:
        # A view with no parser reads its body as raw bytes (a C2PA asset), never as fields.
        if list(view.parser_classes) != []:
            assert list(view.parser_classes) == list(api_input.PARSERS), (pattern, view)
        assert view.content_negotiation_class is api_input.BodyNegotiation, (pattern, view)


def test_json_nested_past_the_parsers_depth_is_a_400_not_a_500(api_for, alice_key, client):
    deep = '{"text": ' + "[" * 50_000 + "]" * 50_000 + "}"
    assert _raw(api_for("alice"), "/detect", deep).status_code == 400
    response = client.generic(
        "POST", "/api/public/v1/verify", deep.encode(), content_type="application/json"
    )
    assert response.status_code == 400


def test_the_soft_binding_lookup_goes_through_the_same_parsers(client):
    url = "/c2pa/v1/matches/byBinding"
    twice = client.generic(
        "POST", url, b'{"alg": "a", "value": "v", "value": "w"}', content_type="application/json"
    )
    assert twice.status_code == 400 and "duplicate key 'value'" in twice.json()["detail"]
    extra = client.post(url, {"alg": "a", "value": "v", "hint": 1}, content_type="application/json")
    assert extra.status_code == 400 and "'hint'" in extra.json()["detail"]
    body = client.generic(
        "GET", f"{url}?alg=a&value=v", b'{"x": 1}', content_type="application/json"
    )
    assert body.status_code == 400 and "takes no body" in body.json()["detail"]
