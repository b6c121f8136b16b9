"""What a submitted text must be: each refusal names its problem and the right status."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import override_settings

from provenance.accounts.services import user_create
from provenance.checks.services.validation import (
    archive_texts,
    audit_texts_validate,
    document_extract,
    team_required,
    text_validate,
)
from provenance.errors import PayloadTooLarge, ProblemError


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (5, "must be a string"),
        ("a\ud800b", "lone surrogate"),
        ("a\x00b", "NUL"),
        (" \n\t", "is empty"),
    ],
)
def test_an_uncheckable_text_is_refused_with_its_reason(text, message):
    with pytest.raises(ProblemError, match=message) as raised:
        text_validate(text, "body")
    assert raised.value.status_code == 400 and "body" in raised.value.message


@override_settings(PROVENANCE_MAX_TEXT_BYTES=10)
def test_a_text_over_the_limit_in_utf8_bytes_is_413():
    assert text_validate("éééée") == "éééée"  # 9 bytes
    with pytest.raises(PayloadTooLarge, match="12 bytes; the limit is 10") as raised:
        text_validate("éééééé")  # 6 characters, 12 bytes
    assert raised.value.status_code == 413


def test_a_text_is_returned_unchanged():
    assert text_validate("  spaced\r\n") == "  spaced\r\n"


def test_an_audits_texts_are_pairs_and_a_bad_item_names_its_index():
    assert audit_texts_validate([{"text": "a"}, {"client_id": "x", "text": "b"}]) == [
        ("", "a"),
        ("x", "b"),
    ]
    for items, index in [
        ([{"text": "a"}, {"body": "b"}], "texts[1]"),
        ([{"text": "a"}, {"text": ""}], "texts[1].text"),
        ([{"text": "a", "client_id": "c" * 201}], "texts[0].client_id"),
    ]:
        with pytest.raises(ProblemError, match=index.replace("[", r"\[").replace("]", r"\]")):
            audit_texts_validate(items)
    with pytest.raises(ProblemError, match="non-empty list"):
        audit_texts_validate([])


@override_settings(PROVENANCE_MAX_AUDIT_TEXTS=2)
def test_an_audit_over_its_size_is_413():
    with pytest.raises(PayloadTooLarge, match="at most 2 texts; got 3"):
        audit_texts_validate([{"text": "a"}] * 3)


def test_a_user_without_a_team_is_refused(cast, db):
    assert team_required(cast["alice"]) == cast["acme"]
    loner = user_create(username="loner", password="loner-pass-123")
    with pytest.raises(ProblemError) as raised:
        team_required(loner)
    assert raised.value.status_code == 403


def test_a_document_is_read_and_a_bad_one_is_a_coded_problem():
    assert document_extract("note.txt", b"plain words").text.strip() == "plain words"
    with pytest.raises(ProblemError) as raised:
        document_extract("note.pdf", b"not a pdf at all")
    assert raised.value.code.startswith("document_") and raised.value.filename == "note.pdf"


def test_an_archive_gives_one_text_per_file_named_by_its_client_id():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.txt", "first text")
        archive.writestr("b.txt", "second text")
    texts = sorted(archive_texts(buffer.getvalue()), key=lambda t: t["client_id"])
    assert [(t["client_id"], t["text"].strip()) for t in texts] == [
        ("a.txt", "first text"),
        ("b.txt", "second text"),
    ]
    with pytest.raises(ProblemError):
        archive_texts(b"not a zip")
