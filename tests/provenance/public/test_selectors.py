"""The discovery document against its shipped JSON Schema, and what it names."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from detector.core.config import ALGORITHMS
from detector.decision import combined, rule
from detector.decision.decide import CORRECTION
from provenance.keys.services import key_unpublish
from provenance.public import selectors
from provenance.public.services import partner_create
from tests.provenance.public.conftest import PUBLIC_NAME

SCHEMA = Path(selectors.__file__).parent / "schema" / "provenance.schema.json"
ANSWER_SCHEMA = SCHEMA.with_name("answer.schema.json")


@pytest.fixture(scope="module")
def schema() -> dict:
    loaded = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def _validate(document: dict, schema: dict) -> None:
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    jsonschema.Draft202012Validator(schema, format_checker=checker).validate(document)


def test_the_served_document_validates_against_the_shipped_schema(published, client, schema):
    response = client.get("/.well-known/provenance.json")
    assert response.status_code == 200
    _validate(response.json(), schema)


def test_an_empty_organization_validates_too(db, client, schema):
    _validate(client.get("/.well-known/provenance.json").json(), schema)


def test_the_schema_refuses_a_document_with_a_key_value(published, client, schema):
    document = client.get("/.well-known/provenance.json").json()
    document["models"][0]["key"] = 42
    with pytest.raises(jsonschema.ValidationError):
        _validate(document, schema)


def test_the_schema_names_every_algorithm_the_detector_knows(schema):
    enum = schema["properties"]["models"]["items"]["properties"]["algorithm"]["enum"]
    assert sorted(enum) == sorted(ALGORITHMS)


def test_a_published_model_shows_its_name_tokenizer_hash_and_prf(published, client):
    (model,) = client.get("/.well-known/provenance.json").json()["models"]
    assert model["name"] == PUBLIC_NAME
    assert model["tokenizer"]["content_hash"] == published.tokenizer.content_hash
    assert model["prf"] == "philox4x32-10-v1" and model["context_width"] == 4


def test_an_unpublished_key_leaves_the_document(published, client):
    key_unpublish(key=published)
    assert selectors.published_keys().count() == 0
    assert client.get("/.well-known/provenance.json").json()["models"] == []


def test_a_partner_is_found_by_its_key_only(db):
    partner, key = partner_create(name="Fact-checkers")
    assert selectors.partner_by_key(key) == partner
    assert selectors.partner_by_key(key + "x") is None
    assert partner.key_sha256 == selectors.key_sha256(key) and key not in partner.key_sha256


def test_the_peers_are_named_in_the_document_and_its_answer_fields(
    published, client, schema, settings
):
    peer = "https://verify.example.org/.well-known/provenance.json"
    settings.PROVENANCE_PUBLIC_PEERS = [peer]
    document = client.get("/.well-known/provenance.json").json()
    _validate(document, schema)
    assert document["peers"]["discovery"] == [peer]
    assert document["peers"]["correction"] == "bonferroni"
    assert document["verification"]["answer"][-2:] == ["peers", "combined"]


def test_without_peers_the_answer_fields_are_the_local_ones(published, client):
    document = client.get("/.well-known/provenance.json").json()
    assert document["peers"]["discovery"] == []
    assert document["verification"]["answer"] == list(selectors.ANSWER_FIELDS)


def test_the_document_publishes_the_decisions_own_minimum_and_corrections(
    published, client, schema, settings, monkeypatch
):
    """The minimum length and both corrections are the library's (``detector.decision``),
    read when the document is served: a change there is a change here."""
    settings.PROVENANCE_PUBLIC_PEERS = ["https://verify.example.org/.well-known/provenance.json"]
    monkeypatch.setattr(rule, "MIN_TOKENS", 40)
    document = client.get("/.well-known/provenance.json").json()
    _validate(document, schema)
    assert document["limits"]["min_tokens"] == 40
    assert document["policy"]["correction"] == CORRECTION
    assert document["peers"]["correction"] == combined.CORRECTION
    assert (
        "strength one of -31, -13, -7, -3 (p < 1e-30, 1e-12, 1e-6, 1e-2) or -1"
        in (document["policy"]["strength"])
    )
    monkeypatch.setattr(combined, "STRENGTH_BANDS", (-20, -5))
    moved = client.get("/.well-known/provenance.json").json()["policy"]["strength"]
    assert "strength one of -21, -6 (p < 1e-20, 1e-5) or -1" in moved


def test_the_shipped_schemas_name_the_decisions_corrections(schema):
    assert schema["properties"]["policy"]["properties"]["correction"] == {"const": CORRECTION}
    peers = schema["properties"]["peers"]["properties"]
    assert peers["correction"] == {"const": combined.CORRECTION}
    answer = json.loads(ANSWER_SCHEMA.read_text())
    claim = answer["properties"]["combined"]["properties"]["correction"]
    assert claim == {"const": combined.CORRECTION}


def test_the_published_key_list_follows_publishing_and_withdrawing(published, alice_key):
    """Read through the per-process row cache, compared on every call: a key withdrawn or
    published anywhere (a bare update) is seen by the next public check."""
    from django.utils import timezone

    from provenance.keys.models import WatermarkKey
    from provenance.public.selectors import published_key_list

    assert [key.id for key in published_key_list()] == [alice_key.id]
    WatermarkKey.objects.filter(id=alice_key.id).update(published_at=None)
    assert published_key_list() == []
    WatermarkKey.objects.filter(id=alice_key.id).update(published_at=timezone.now())
    assert [key.id for key in published_key_list()] == [alice_key.id]
