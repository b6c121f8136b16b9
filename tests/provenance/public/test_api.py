"""The public API over HTTP: no account; a proof of work or a partner's key; the answer
holds the verdict, the model, a coarse strength, the tokens scored and a receipt, nothing more."""

from __future__ import annotations

import json

import pytest

from detector.reports.receipt import verify_receipt
from provenance.public.families import MIN_WORDS
from provenance.public.services import partner_create
from tests.provenance.public.conftest import PUBLIC_NAME, VERIFY
from tests.provenance.watermark import HUMAN_TEXT

ANSWER = {"verdict", "model", "strength", "tokens_scored", "receipt"}


def test_a_watermarked_text_answers_watermarked_with_the_published_name(published, check, wm_text):
    response = check(wm_text)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == ANSWER
    assert body["verdict"] == "watermarked"
    assert body["model"] == PUBLIC_NAME
    assert isinstance(body["strength"], int) and body["strength"] <= -3
    assert body["tokens_scored"] > 0


def test_the_answer_holds_no_score_no_exact_p_and_no_per_token_data(published, check, wm_text):
    raw = check(wm_text).content.decode()
    for word in ("p_value", "log10_p", "score", "heatmap", "token_data", "spans", "hypotheses"):
        assert f'"{word}"' not in raw
    assert str(published.id) not in raw and "acme" not in raw  # no key id, no team


def test_a_human_text_names_no_model_and_no_strength(published, check, human_text):
    body = check(human_text).json()
    assert body["verdict"] != "watermarked"
    assert body["model"] is None and body["strength"] is None


def test_a_text_under_the_public_minimum_is_refused_naming_it(published, check):
    response = check("Too short.")
    assert response.status_code == 400 and response.json()["code"] == "too_short"
    assert f"at least {MIN_WORDS} words" in response.json()["detail"]
    assert "verdict" not in response.json()


def test_without_a_proof_of_work_there_is_no_verdict_but_a_challenge(published, anon, wm_text):
    response = anon.post(VERIFY, {"text": wm_text}, format="json")
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "proof_of_work_required"
    assert "verdict" not in body and {"challenge", "salt", "signature"} <= set(body["challenge"])


def test_a_proof_of_work_is_accepted_once(published, anon, wm_text):
    from tests.provenance.public.conftest import solve

    proof = solve(anon.get("/api/public/v1/challenge").json())
    first = anon.post(VERIFY, {"text": wm_text}, format="json", HTTP_X_PROVENANCE_POW=proof)
    again = anon.post(VERIFY, {"text": wm_text}, format="json", HTTP_X_PROVENANCE_POW=proof)
    assert first.status_code == 200 and again.status_code == 403


def test_a_wrong_solution_is_refused(published, anon, wm_text):
    challenge = anon.get("/api/public/v1/challenge").json()
    forged = {**challenge, "number": 1}
    forged.pop("maxNumber")
    import base64

    proof = base64.b64encode(json.dumps(forged).encode()).decode()
    response = anon.post(VERIFY, {"text": wm_text}, format="json", HTTP_X_PROVENANCE_POW=proof)
    assert response.status_code == 403


def test_the_address_budget_answers_429_with_retry_after(published, check, settings):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 3
    codes = [check(f"{HUMAN_TEXT} ({i})").status_code for i in range(4)]
    assert codes == [200, 200, 200, 429]
    assert int(check(f"{HUMAN_TEXT} (x)")["Retry-After"]) >= 1


def test_the_global_budget_holds_across_addresses(published, check, settings):
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 2
    codes = [check(f"{HUMAN_TEXT} ({i})", REMOTE_ADDR=f"10.0.0.{i}").status_code for i in range(3)]
    assert codes == [200, 200, 429]


def test_the_same_text_gets_the_same_decision_in_a_receipt_of_its_own(published, check, wm_text):
    first, second = check(wm_text).json(), check(wm_text).json()
    assert second.pop("receipt") != first.pop("receipt")  # this request's time and signature
    assert first == second  # the same decision: no fresh draw of anything


def test_the_receipt_verifies_against_the_published_jwks(published, check, wm_text, client):
    body = check(wm_text).json()
    jwks = client.get("/.well-known/jwks.json").json()
    payload = verify_receipt(body["receipt"], jwks).payload
    assert payload["verdict"] == "watermarked" and payload["models"] == [PUBLIC_NAME]


def test_a_partner_checks_without_proof_of_work(published, anon, wm_text):
    _, key = partner_create(name="Newsroom")
    anon.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = anon.post(VERIFY, {"text": wm_text}, format="json")
    assert response.status_code == 200 and response.json()["verdict"] == "watermarked"


def test_300_checks_in_a_row_from_one_partner_meet_its_budget(published, anon):
    partner, key = partner_create(name="Regulator")
    anon.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    codes = [anon.post(VERIFY, {"text": f"t {i}"}, format="json").status_code for i in range(300)]
    assert codes[:120] == [400] * 120 and set(codes[120:]) == {429}  # too short, yet spent
    assert partner.usage.count() == 300
    assert partner.usage.filter(status_code=429).count() == 180


def test_a_revoked_partner_key_is_refused(published, anon):
    from provenance.public.services import partner_revoke

    partner, key = partner_create(name="Gone")
    partner_revoke(partner=partner)
    anon.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert anon.post(VERIFY, {"text": "t"}, format="json").status_code == 401


def test_bad_input_gets_a_clear_error(published, check):
    response = check("   ")
    assert response.status_code == 400 and "empty" in response.json()["detail"]


def test_with_no_published_model_the_check_is_unavailable(alice_key, check, wm_text):
    assert check(wm_text).status_code == 503


def test_the_receipt_verifies_offline_with_the_cli_and_fails_on_a_changed_text(
    published, check, wm_text, client, tmp_path, capsys
):
    from detector.cli.main import main

    (tmp_path / "receipt.jws").write_text(check(wm_text).json()["receipt"])
    (tmp_path / "jwks.json").write_text(client.get("/.well-known/jwks.json").content.decode())
    (tmp_path / "text.txt").write_bytes(wm_text.encode())
    args = ["verify", str(tmp_path / "receipt.jws"), "--jwks", str(tmp_path / "jwks.json")]
    assert main([*args, "--text", str(tmp_path / "text.txt")]) == 0
    assert f"watermarked ({PUBLIC_NAME})" in capsys.readouterr().out
    (tmp_path / "text.txt").write_bytes(wm_text.replace("a", "e", 1).encode())
    assert main([*args, "--text", str(tmp_path / "text.txt")]) == 1


def test_a_document_is_checked_as_the_private_api_takes_it(published, anon, wm_text):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.provenance.public.conftest import solve

    proof = solve(anon.get("/api/public/v1/challenge").json())
    upload = SimpleUploadedFile("essay.txt", wm_text.encode(), content_type="text/plain")
    response = anon.post(VERIFY, {"file": upload}, format="multipart", HTTP_X_PROVENANCE_POW=proof)
    assert response.status_code == 200, response.content
    assert response.json()["verdict"] == "watermarked"


def test_a_document_is_not_read_without_a_proof_of_work(published, anon, monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from provenance.public import services

    monkeypatch.setattr(services, "document_extract", lambda *a: pytest.fail("extracted"))
    upload = SimpleUploadedFile("essay.txt", b"some text", content_type="text/plain")
    assert anon.post(VERIFY, {"file": upload}, format="multipart").status_code == 403


def test_the_answer_validates_against_the_shipped_answer_schema(published, check, wm_text):
    from pathlib import Path

    import jsonschema

    from provenance.public import api

    schema = json.loads((Path(api.__file__).parent / "schema" / "answer.schema.json").read_text())
    body = check(wm_text).json()
    jsonschema.Draft202012Validator(schema).validate(body)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({**body, "score": 3.2})


def test_documents_are_read_a_few_at_a_time_and_one_more_is_answered_503(
    published, anon, wm_text, monkeypatch
):
    """Public verification reads its documents in the request (nothing is stored to poll):
    with every slot of the process taken, a document is refused at once with Retry-After,
    while a pasted text and an unsupported file are answered as ever (they take no slot)."""
    import threading

    from django.core.files.uploadedfile import SimpleUploadedFile

    from provenance.public import services
    from tests.provenance.public.conftest import solve

    slots = threading.BoundedSemaphore(1)
    monkeypatch.setattr(services, "EXTRACTIONS", slots)
    assert slots.acquire(blocking=False)  # another request is reading a document

    def post(**data):
        proof = solve(anon.get("/api/public/v1/challenge").json())
        return anon.post(VERIFY, data, format="multipart", HTTP_X_PROVENANCE_POW=proof)

    busy = post(file=SimpleUploadedFile("essay.txt", wm_text.encode()))
    assert busy.status_code == 503 and busy["Retry-After"] == "5"
    assert busy.json()["code"] == "document_busy"
    assert post(file=SimpleUploadedFile("tool.exe", b"MZ")).json()["code"] == (
        "document_unsupported"
    )
    assert post(text=wm_text).json()["verdict"] == "watermarked"
    slots.release()
    assert post(file=SimpleUploadedFile("essay.txt", wm_text.encode())).status_code == 200
    assert slots.acquire(blocking=False)  # the slot was given back after reading
