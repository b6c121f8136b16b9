"""StrictInput: a body's fields are an allowlist; declared fields validate as before."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from provenance.api_input import MAX_NAMED, StrictInput


class Body(StrictInput):
    text = serializers.CharField()
    limit = serializers.IntegerField(required=False)


def test_declared_fields_validate_as_before():
    body = Body(data={"text": "a", "limit": "3"})
    assert body.is_valid(), body.errors
    assert body.validated_data == {"text": "a", "limit": 3}


def test_an_undeclared_field_is_refused_by_name():
    body = Body(data={"text": "a", "limt": 3})
    assert not body.is_valid()
    assert "'limt'" in str(body.errors["non_field_errors"][0])


@pytest.mark.parametrize("count", [MAX_NAMED, MAX_NAMED + 7])
def test_the_message_names_a_few_and_counts_the_rest(count):
    body = Body(data={"text": "a", **{f"x{i:02d}": i for i in range(count)}})
    assert not body.is_valid()
    message = str(body.errors["non_field_errors"][0])
    assert message.count("'x") == MAX_NAMED
    assert ("7 more" in message) == (count > MAX_NAMED)


def test_a_body_that_is_not_an_object_is_left_to_the_serializer():
    body = Body(data=["text"])
    assert not body.is_valid() and "non_field_errors" in body.errors
