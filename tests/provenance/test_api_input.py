"""provenance.api_input: the API's parsers and what each operation declares."""

from __future__ import annotations

import io

import pytest
from rest_framework import serializers
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from provenance import api_input
from provenance.api_input import MAX_NAMED, BodyRefused, JSONParser, declared
from provenance.audits.api import AuditListCreateApi
from provenance.checks.api.checks import CheckListCreateApi
from provenance.checks.api.detect import DetectApi
from provenance.keys.api import KeyViewSet


def _parse(raw: str | bytes, context=None):
    raw = raw.encode() if isinstance(raw, str) else raw
    return JSONParser().parse(io.BytesIO(raw), "application/json", context or {})


def test_json_parses_as_before_without_a_view():
    assert _parse('{"a": [1, {"b": null}], "c": "d"}') == {"a": [1, {"b": None}], "c": "d"}


@pytest.mark.parametrize("raw", ['{"a": 1, "a": 1}', '[{"x": {"b": 1, "b": 2}}]'])
def test_a_key_named_twice_at_any_depth_is_refused(raw):
    with pytest.raises(BodyRefused, match="duplicate key '(a|b)'"):
        _parse(raw)


@pytest.mark.parametrize("raw", ['{"a": NaN}', '{"a": ', "{'a': 1}", b'{"a": "\xff"}'])
def test_malformed_json_invalid_utf8_and_bare_constants_are_a_parse_error(raw):
    with pytest.raises(ParseError):
        _parse(raw)


def test_json_nested_past_the_decoders_depth_is_a_parse_error():
    with pytest.raises(ParseError, match="nested too deeply"):
        _parse("[" * 100_000 + "]" * 100_000)


class Item(serializers.Serializer):
    name = serializers.CharField()
    ignored = serializers.CharField(read_only=True)


class Body(serializers.Serializer):
    text = serializers.CharField()
    items = serializers.ListField(child=Item())
    one = Item(required=False)
    tags = serializers.ListField(child=serializers.CharField())
    extra = serializers.DictField(required=False)


def _unknown(data):
    return sorted(api_input._unknown(data, api_input._body(Body)))


def test_undeclared_names_are_found_with_their_path_at_any_declared_depth():
    data = {
        "text": "t",
        "txet": 1,
        "items": [{"name": "a"}, {"nmae": "b", "ignored": "x"}, "not an object"],
        "one": {"name": "c", "more": 1},
        "tags": [{"free": 1}],  # a list of strings: its items are the serializer's to refuse
        "extra": {"anything": {"goes": 1}},  # a free-form object
    }
    assert _unknown(data) == ["items[1].ignored", "items[1].nmae", "one.more", "txet"]


def test_a_body_that_is_not_an_object_has_no_names():
    assert _unknown(["text"]) == [] and _unknown("text") == []


@pytest.mark.parametrize("count", [MAX_NAMED, MAX_NAMED + 7])
def test_the_message_names_a_few_and_counts_the_rest(count):
    body = api_input._body(Body)
    with pytest.raises(BodyRefused) as refused:
        api_input._refuse_unknown([f"x{i:02d}" for i in range(count)], body)
    assert refused.value.message.count("'x") == MAX_NAMED
    assert ("7 more" in refused.value.message) == (count > MAX_NAMED)


def _view(view_class, method, action=None):
    factory = APIRequestFactory()
    view = view_class(action=action) if action else view_class()
    view.request = Request(factory.generic(method, "/"))
    view.args, view.kwargs, view.format_kwarg = (), {}, None
    return view


def test_each_operation_declares_what_its_schema_says():
    detect = declared(_view(DetectApi, "POST"))
    assert set(detect.body("application/json")) == {"text"}
    checks = declared(_view(CheckListCreateApi, "POST"))
    assert set(checks.body("multipart/form-data")) == {"text", "file", "key_ids"}
    with pytest.raises(UnsupportedMediaType):
        checks.body("application/x-www-form-urlencoded")
    audits = declared(_view(AuditListCreateApi, "POST")).body("application/json")
    assert audits["texts"].many and set(audits["texts"].nested) == {"client_id", "text"}
    assert declared(_view(KeyViewSet, "POST", "rotate")).takes_none
    assert not declared(_view(KeyViewSet, "POST", "create")).takes_none
    assert declared(_view(CheckListCreateApi, "GET")).takes_none
    assert declared(_view(DetectApi, "DELETE")).takes_none


def test_the_schema_closes_every_request_object_it_declares():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    seen: list[str] = []

    def walk(node):
        if isinstance(node, dict) and "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.append(name)
                walk(components[name])
        elif isinstance(node, dict):
            if "properties" in node:
                assert node["additionalProperties"] is False, node
                for each in node["properties"].values():
                    walk(each)
            walk(node.get("items"))

    bodies = 0
    for item in schema["paths"].values():
        for operation in item.values():
            for content in operation.get("requestBody", {}).get("content", {}).values():
                bodies += 1
                walk(content["schema"])
    assert bodies >= 8 and {"CheckInput", "AuditInput", "AuditTextInput"} <= set(seen)
    assert "additionalProperties" not in components["CheckDetailOutput"]  # answers stay open
