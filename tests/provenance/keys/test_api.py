"""Tokenizers in the registry: built-ins by name, any tokenizer.json uploaded (API, admin)."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import Permission

from detector.text.tokenizers import load_tokenizer
from provenance.keys.models import Tokenizer
from provenance.keys.services import tokenizer_builtin
from provenance.scoring.service import tokenizer_load


@pytest.fixture(scope="module")
def smol_json() -> bytes:
    # Loaded from the usual data dir, where its GGUF conversion is cached (10-20 s otherwise).
    return load_tokenizer("default")._backend.to_str().encode()


@pytest.fixture(autouse=True)
def _own_data_dir(smol_json, tmp_path, monkeypatch):
    monkeypatch.setenv("PROVENANCE_DATA_DIR", str(tmp_path))


@pytest.fixture
def uploader(cast, api_for):
    cast["alice"].user_permissions.add(Permission.objects.get(codename="add_tokenizer"))
    return api_for("alice")


def _upload(client, content: bytes, name: str = "smol-upload"):
    file = io.BytesIO(content)
    file.name = "tokenizer.json"
    return client.post("/api/v1/tokenizers", {"name": name, "file": file}, format="multipart")


def test_an_uploaded_tokenizer_json_is_stored_hashed_and_loads(uploader, tmp_path, smol_json):
    response = _upload(uploader, smol_json)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["vocab_size"] == 49152 and body["source_kind"] == "upload"
    assert body["content_hash"] == load_tokenizer("default").content_hash
    row = Tokenizer.objects.get(id=body["id"])
    assert row.source.startswith(str(tmp_path / "tokenizers" / "uploads"))
    assert tokenizer_load(row).content_hash == row.content_hash


def test_a_file_that_is_not_a_tokenizer_is_refused_and_nothing_is_stored(uploader, tmp_path):
    response = _upload(uploader, json.dumps({"hello": "world"}).encode())
    assert response.status_code == 400
    assert "not a Hugging Face tokenizer.json" in response.json()["detail"]
    assert not Tokenizer.objects.filter(name="smol-upload").exists()
    assert not (tmp_path / "tokenizers" / "uploads").exists()


def test_a_tokenizer_that_does_not_round_trip_is_refused(uploader, smol_json):
    config = json.loads(smol_json)
    config["normalizer"] = {"type": "Lowercase"}  # decoding can no longer give the text back
    response = _upload(uploader, json.dumps(config).encode())
    assert response.status_code == 400 and "round-trip" in response.json()["detail"]
    assert not Tokenizer.objects.filter(name="smol-upload").exists()


def test_an_oversized_upload_is_refused_with_413(uploader, settings, smol_json):
    settings.PROVENANCE_MAX_TOKENIZER_BYTES = 1000
    response = _upload(uploader, smol_json)
    assert response.status_code == 413 and "limit is 1000" in response.json()["detail"]


def test_a_duplicate_name_is_refused(uploader, smol_json):
    assert _upload(uploader, smol_json).status_code == 201
    response = _upload(uploader, smol_json)
    assert response.status_code == 400 and "already registered" in response.json()["detail"]


def test_uploading_needs_the_add_tokenizer_permission_but_listing_does_not(
    api_for, uploader, smol_json
):
    assert _upload(api_for("bob"), smol_json).status_code == 403
    assert _upload(uploader, smol_json).status_code == 201
    listed = api_for("bob").get("/api/v1/tokenizers").json()
    assert [t["name"] for t in listed] == ["smol-upload"]


def test_a_builtin_is_registered_by_name(uploader):
    response = uploader.post(
        "/api/v1/tokenizers", {"name": "Mistral v3", "builtin": "mistral-v3"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["vocab_size"] == 32768
    assert response.json()["content_hash"] == load_tokenizer("mistral-v3").content_hash
    bad = uploader.post("/api/v1/tokenizers", {"name": "x", "builtin": "gpt-9"}, format="json")
    assert bad.status_code == 400


def test_a_builtin_row_is_created_once_and_keys_can_use_it(cast):
    from provenance.keys.services import key_create

    row = tokenizer_builtin("mistral-v3")
    assert tokenizer_builtin("mistral-v3") == row and row.source == "mistral-v3"
    key, _ = key_create(name="vllm-42", team=cast["acme"], tokenizer=row, value=42)
    assert key.tokenizer.vocab_size == 32768


def test_the_admin_accepts_an_upload_and_refuses_a_broken_one(admin_client, smol_json):
    good = io.BytesIO(smol_json)
    good.name = "tokenizer.json"
    response = admin_client.post(
        "/admin/keys/tokenizer/add/",
        {"name": "admin-upload", "source_kind": "upload", "source_path": "", "upload": good},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Tokenizer.objects.get(name="admin-upload").vocab_size == 49152
    broken = io.BytesIO(b"{not json")
    broken.name = "tokenizer.json"
    response = admin_client.post(
        "/admin/keys/tokenizer/add/",
        {"name": "admin-broken", "source_kind": "upload", "source_path": "", "upload": broken},
    )
    assert response.status_code == 200 and "not a Hugging Face tokenizer.json" in (
        response.content.decode()
    )
    assert not Tokenizer.objects.filter(name="admin-broken").exists()


def test_the_admin_registers_a_builtin(admin_client):
    response = admin_client.post(
        "/admin/keys/tokenizer/add/",
        {"name": "mistral", "source_kind": "builtin", "source_path": "mistral-v3"},
    )
    assert response.status_code == 302
    assert Tokenizer.objects.get(name="mistral").vocab_size == 32768


def test_a_keys_calibration_answers_the_charts_figures(api_for, cast, alice_key, tokenizer_row):
    from provenance.keys.services import key_create
    from tests.provenance.keys.test_selectors import finished_calibration

    alice = api_for("alice")
    empty = alice.get(f"/api/v1/keys/{alice_key.id}/calibration").json()
    assert empty == {"key_id": str(alice_key.id), "pending": False, "calibration": None}
    run = finished_calibration(alice_key, assisted=True)
    body = alice.get(f"/api/v1/keys/{alice_key.id}/calibration").json()["calibration"]
    assert body["id"] == str(run.id) and body["threshold"] == 0.01
    assert [r["genre"] for r in body["rates"]] == ["prose", "code", "templated"]
    prose = body["rates"][0]
    assert prose["rate"] == 0.04 and prose["above_threshold"] is True
    assert prose["ci_low"] == pytest.approx(run.rates.get(genre="prose").ci_low)
    assert body["assisted_rates"][0]["texts"] == 40
    assert [c["tokens_needed"] for c in body["power"]] == [100, None]
    assert body["power"][0]["points"][1] == {
        "tokens": 50,
        "texts": 8,
        "detected": 4,
        "scored": 45,
        "power": 0.5,
    }
    private, _ = key_create(name="theirs", team=cast["other"], tokenizer=tokenizer_row)
    assert alice.get(f"/api/v1/keys/{private.id}/calibration").status_code == 404
    assert api_for("charlie").get(f"/api/v1/keys/{alice_key.id}/calibration").status_code == 404


def test_the_schema_documents_the_calibration_answer(api_for, cast):
    schema = api_for("alice").get("/api/schema/?format=json").json()
    assert "/api/v1/keys/{id}/calibration" in schema["paths"]
    fields = schema["components"]["schemas"]["CalibrationOutput"]["properties"]
    assert {"rates", "assisted_rates", "power", "threshold"} <= set(fields)
