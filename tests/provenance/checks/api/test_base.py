"""What the API views of checks share: tier redaction (by team and by key ownership), the
text and key-id fields, the body, upload and ``?wait=`` guards, and serializers whose fields
are built once."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory, force_authenticate

from provenance.accounts.models import Team
from provenance.checks.api.base import (
    FieldsOnce,
    KeyIdsField,
    OutputOnce,
    TextField,
    TieredApi,
    body_size_guard,
    read_upload,
    wait_seconds,
)
from provenance.checks.models import Check
from provenance.errors import PayloadTooLarge

factory = APIRequestFactory()


class Echo(TieredApi):
    answer: object = None

    def get(self, request):
        return Response(self.answer)


def _answer(user, data):
    request = factory.get("/echo")
    force_authenticate(request, user=user)
    return Echo.as_view(answer=data)(request).data


def test_a_basic_team_gets_rounded_figures_an_auditor_exact_ones(cast, alice_key):
    data = {
        "id": "x",
        "log10_p": -7.6,
        "token_data": {"a": 1},
        "hypotheses": [{"key_id": str(alice_key.id), "log10_p": -7.6}],
    }
    assert _answer(cast["alice"], data) == data
    Team.objects.filter(id=cast["acme"].id).update(oracle_tier="basic")
    basic = _answer(User.objects.get(username="alice"), data)  # the team read anew
    assert basic["log10_p"] == -8.0 and "token_data" not in basic
    assert basic["hypotheses"][0]["log10_p"] == -8.0


def test_an_auditor_sees_a_key_it_does_not_own_as_the_basic_tier_would(cast, alice_key):
    foreign = {"key_id": str(uuid.uuid4()), "log10_p": -3.3}
    owned = {"key_id": str(alice_key.id), "log10_p": -3.3}
    assert _answer(cast["alice"], [owned, foreign]) == [owned, {**foreign, "log10_p": -4.0}]


def test_a_summary_without_its_keys_is_judged_by_the_stored_check(cast, alice_key):
    from provenance.checks.services import check_create

    check = check_create(user=cast["alice"], text="some text")
    Check.objects.filter(id=check.id).update(key_ids=[str(uuid.uuid4())])
    summary = {"id": str(check.id), "log10_p": -2.5}
    assert _answer(cast["alice"], summary)["log10_p"] == -3.0
    Check.objects.filter(id=check.id).update(key_ids=[str(alice_key.id)])
    assert _answer(cast["alice"], summary)["log10_p"] == -2.5


def test_an_error_answer_is_not_redacted(cast):
    Team.objects.filter(id=cast["acme"].id).update(oracle_tier="basic")
    alice = User.objects.get(username="alice")

    class Failing(TieredApi):
        def get(self, request):
            return Response({"detail": "bad", "log10_p": -7.6}, status=400)

    request = factory.get("/x")
    force_authenticate(request, user=alice)
    assert _answer(alice, {"log10_p": -7.6}) == {"log10_p": -8.0}
    assert Failing.as_view()(request).data["log10_p"] == -7.6


class Body(serializers.Serializer):
    text = TextField()
    key_ids = KeyIdsField()


def test_the_text_field_takes_strings_only_and_keeps_whitespace():
    ok = Body(data={"text": "  a\r\n"})
    assert ok.is_valid() and ok.validated_data["text"] == "  a\r\n"
    number = Body(data={"text": 5})
    assert not number.is_valid() and number.errors["text"] == ["text must be a string."]
    surrogate = Body(data={"text": "a\ud800"})
    assert not surrogate.is_valid()
    assert surrogate.errors["text"][0].code == "surrogate_characters_not_allowed"
    assert "U+D800" in str(surrogate.errors["text"][0])


@override_settings(PROVENANCE_MAX_KEY_IDS=2)
def test_key_ids_are_uuids_at_most_the_limit_and_a_refusal_repeats_no_id():
    ids = [str(uuid.uuid4()) for _ in range(3)]
    ok = Body(data={"text": "t", "key_ids": ids[:2]})
    assert ok.is_valid() and ok.validated_data["key_ids"] == [uuid.UUID(i) for i in ids[:2]]
    many = Body(data={"text": "t", "key_ids": ids})
    assert not many.is_valid() and many.errors["key_ids"] == ["name at most 2 key ids"]
    bad = Body(data={"text": "t", "key_ids": ["secret-looking-id", ids[0]]})
    assert not bad.is_valid() and bad.errors["key_ids"] == ["key ids must be UUIDs"]
    assert "secret-looking-id" not in str(bad.errors)


def test_fields_once_builds_from_the_model_once_and_gives_fresh_fields(db):
    class Summary(FieldsOnce):
        class Meta:
            model = Check
            fields = ["id", "status"]

    first, second = Summary().fields, Summary().fields
    assert list(first) == ["id", "status"]
    assert first["status"] is not second["status"]
    assert Summary._fields_once is not None and set(Summary._fields_once) == {"id", "status"}


def test_output_once_binds_its_fields_once_and_renders_each_instance_from_them(db):
    class Item(OutputOnce):
        label = serializers.SerializerMethodField()

        def get_label(self, check: Check) -> str:
            return f"{check.status}:{check.filename}"

        class Meta:
            model = Check
            fields = ["id", "status", "filename", "label"]

    first, second = Check(filename="a.txt"), Check(filename="b.txt", status="done")
    assert Item(first).fields is Item(second).fields  # built and bound once
    assert Item._prototype is not None and Item(first).fields["label"].parent is Item._prototype
    assert Item(first).data == {
        "id": str(first.id),
        "status": first.status,
        "filename": "a.txt",
        "label": f"{first.status}:a.txt",
    }
    assert Item(second).data["label"] == "done:b.txt"
    listed = Item([first, second], many=True).data
    assert [row["filename"] for row in listed] == ["a.txt", "b.txt"]
    # Given a context or data, an instance builds its own fields.
    own = Item(first, context={"x": 1})
    assert own.fields is not Item(first).fields and own.fields["label"].parent is own
    assert Item(data={"filename": "c.txt"}).fields is not Item(first).fields


def _request(path="/x", **meta):
    return Request(factory.post(path, **meta))


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=100)
def test_a_body_over_the_upload_limit_is_413_before_parsing():
    body_size_guard(_request(CONTENT_LENGTH="100"))
    with pytest.raises(PayloadTooLarge, match="101 bytes; the limit is 100"):
        body_size_guard(_request(CONTENT_LENGTH="101"))


@override_settings(PROVENANCE_MAX_WAIT=30)
@pytest.mark.parametrize(("raw", "wait"), [(None, 0.0), ("0", 0.0), ("2.5", 2.5), ("30", 30.0)])
def test_wait_is_seconds_up_to_the_limit(raw, wait):
    path = "/x" if raw is None else f"/x?wait={raw}"
    assert wait_seconds(_request(path)) == wait


@override_settings(PROVENANCE_MAX_WAIT=30)
@pytest.mark.parametrize("raw", ["31", "-1", "nan", "soon"])
def test_a_bad_wait_is_refused(raw):
    with pytest.raises(serializers.ValidationError) as raised:
        wait_seconds(_request(f"/x?wait={raw}"))
    assert "from 0 to 30" in str(raised.value.detail["wait"][0])


@override_settings(PROVENANCE_MAX_DOCUMENT_BYTES=10, DATA_UPLOAD_MAX_MEMORY_SIZE=8)
def test_an_upload_is_read_unless_larger_than_any_document_may_be():
    assert read_upload(SimpleUploadedFile("a.txt", b"0123456789")) == b"0123456789"
    with pytest.raises(PayloadTooLarge, match="11 bytes; the limit is 10"):
        read_upload(SimpleUploadedFile("a.txt", b"0123456789!"))
