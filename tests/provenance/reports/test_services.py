"""Signed reports: they verify offline, any changed character fails, old reports survive a
rotation of the signing key, and no report holds a key value."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from detector.cli.main import main as detector_main
from detector.reports.signed import MEDIA_TYPE, ReportError, verify
from provenance.checks.models import Check, Hypothesis
from provenance.checks.services import check_score
from provenance.keys.services import key_create
from provenance.reports.models import SigningKey
from tests.provenance.conftest import KEY_VALUE

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(api_for):
    return api_for("alice")


@pytest.fixture
def scored(alice, alice_key, wm_text):
    check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    check_score(check_id)
    return check_id


def _report(client, check_id) -> str:
    response = client.get(f"/api/v1/checks/{check_id}/report")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == MEDIA_TYPE
    return response.content.decode()


def _jwks(client) -> dict:
    return client.get("/.well-known/jwks.json").json()


def _files(tmp_path, token, jwks, text=None, key=None):
    (tmp_path / "report.jws").write_text(token)
    (tmp_path / "jwks.json").write_text(json.dumps(jwks))
    args = [str(tmp_path / "report.jws"), "--jwks", str(tmp_path / "jwks.json")]
    if text is not None:
        (tmp_path / "text.txt").write_bytes(text.encode("utf-8"))
        args += ["--text", str(tmp_path / "text.txt")]
    if key is not None:
        (tmp_path / "key").write_text(str(key))
        args += ["--key-file", str(tmp_path / "key"), "--tokenizer", "default"]
    return ["verify", *args]


def test_a_report_verifies_offline_with_text_and_recomputation(alice, scored, wm_text, tmp_path):
    token, jwks = _report(alice, scored), _jwks(alice)
    payload = verify(token, jwks).payload
    assert payload["verdict"]["is_watermarked"] is True
    assert payload["verdict"]["verdict"] == "watermarked" and payload["verdict"]["reason"]
    assert payload["prf"] == "philox4x32-10-v1" and payload["correction"] == "holm"
    h = payload["hypotheses"][0]
    assert h["key"]["name"] == "acme-main" and h["tokenizer"]["content_hash"]
    assert h["deduplication"] == "first-occurrence-of-context" and h["context_width"] == 4
    assert detector_main(_files(tmp_path, token, jwks, wm_text, KEY_VALUE)) == 0


def test_the_verify_command_runs_as_a_program(alice, scored, wm_text, tmp_path):
    args = _files(tmp_path, _report(alice, scored), _jwks(alice), wm_text)
    done = subprocess.run(
        [sys.executable, "-m", "detector", *args], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK: signature valid") and "text matches" in done.stdout


def test_one_changed_character_of_the_text_fails(alice, scored, wm_text, tmp_path, capsys):
    changed = wm_text[:10] + ("x" if wm_text[10] != "x" else "y") + wm_text[11:]
    assert detector_main(_files(tmp_path, _report(alice, scored), _jwks(alice), changed)) == 1
    assert "does not match the report's SHA-256" in capsys.readouterr().err


def _flip(segment: str, position: int) -> str:
    ch = segment[position]
    return segment[:position] + ("A" if ch != "A" else "B") + segment[position + 1 :]


def test_one_changed_character_of_the_payload_or_signature_fails(alice, scored, tmp_path):
    token, jwks = _report(alice, scored), _jwks(alice)
    header, payload, signature = token.split(".")
    tampered_payload = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    tampered_payload["verdict"]["is_watermarked"] = False
    forged = base64.urlsafe_b64encode(json.dumps(tampered_payload).encode()).rstrip(b"=")
    for bad in (
        f"{header}.{_flip(payload, 20)}.{signature}",
        f"{header}.{forged.decode()}.{signature}",
        f"{header}.{payload}.{_flip(signature, 5)}",
    ):
        with pytest.raises(ReportError):
            verify(bad, jwks)
        assert detector_main(_files(tmp_path, bad, jwks)) == 1


def test_recomputing_with_another_key_fails(alice, scored, wm_text, tmp_path, capsys):
    args = _files(tmp_path, _report(alice, scored), _jwks(alice), wm_text, KEY_VALUE ^ 1)
    assert detector_main(args) == 1
    assert "recomputed" in capsys.readouterr().err


def test_a_rotated_signing_key_still_verifies_old_reports(alice, scored):
    old = _report(alice, scored)
    call_command("report_key_rotate")
    new = _report(alice, scored)
    jwks = _jwks(alice)
    assert len(jwks["keys"]) == 2
    assert verify(old, jwks).kid != verify(new, jwks).kid
    current_only = {"keys": [k for k in jwks["keys"] if k["kid"] == verify(new, jwks).kid]}
    with pytest.raises(ReportError):
        verify(old, current_only)  # the old key, not the new one, is what verifies it


def test_no_report_holds_a_key_value_and_no_published_key_a_private_half(alice, scored):
    token = _report(alice, scored)
    decoded = "".join(
        base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode("latin-1")
        for part in token.split(".")[:2]
    )
    for form in (str(KEY_VALUE), f"{KEY_VALUE:x}", f"{KEY_VALUE & 0xFFFFFFFF}"):
        assert form not in decoded and form not in token
    assert all("d" not in key for key in _jwks(alice)["keys"])


def test_the_signing_key_is_stored_encrypted_under_the_kek(alice, scored):
    _report(alice, scored)
    row = SigningKey.objects.get()
    assert b'"d"' not in bytes(row.encrypted_private)
    assert "d" not in row.public_jwk


def test_a_basic_tier_report_rounds_p_down_and_holds_no_score(
    alice, scored, cast, wm_text, tmp_path
):
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    token, jwks = _report(alice, scored), _jwks(alice)
    payload = verify(token, jwks).payload
    h = payload["hypotheses"][0]
    assert payload["tier"] == "basic" and h["score"] is None and h["p_value"] is None
    assert h["log10_p"] == int(h["log10_p"]) and payload["verdict"]["log10_p"] == int(
        payload["verdict"]["log10_p"]
    )
    assert detector_main(_files(tmp_path, token, jwks, wm_text, KEY_VALUE)) == 0


def test_a_pending_check_has_no_report_yet(alice, alice_key):
    check_id = alice.post("/api/v1/checks", {"text": "pending"}, format="json").json()["id"]
    assert alice.get(f"/api/v1/checks/{check_id}/report").status_code == 409


def test_the_printable_page_shows_the_signed_report(cast, scored, client):
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{scored}/report/").content.decode()
    assert 'id="report-jws"' in page and "python -m detector verify" in page
    detail = client.get(f"/checks/{scored}/").content.decode()
    assert f"/checks/{scored}/report/" in detail


# --- the n-gram table behind the scored tokens ------------------------------------------


@pytest.fixture
def shipped_table():
    from detector.text.tokenizers import load_tokenizer

    return load_tokenizer().ngram_table


def _rebuilt(monkeypatch, table, text):
    """The shipped table replaced by a rebuild whose corpus held the first 40 tokens of
    ``text`` (so its pairs there are now common)."""
    from detector.text import ngrams
    from detector.text.tokenizers import load_tokenizer

    added = ngrams.fingerprints(load_tokenizer().encode(text)[:40], table.width)
    hashes = np.union1d(table.hashes, added).astype(np.uint32)
    rebuilt = ngrams.NgramTable(hashes, table.width, table.tokenizer_hash)
    monkeypatch.setattr(ngrams, "table_for", lambda tokenizer_hash: rebuilt)
    return rebuilt


def test_a_report_names_the_ngram_table_that_filtered_its_tokens(alice, scored, shipped_table):
    payload = verify(_report(alice, scored), _jwks(alice)).payload
    (h,) = payload["hypotheses"]
    assert h["ngram_table"] == shipped_table.content_hash


def test_verify_after_a_table_rebuild_fails_clearly_and_holds_with_the_reports_table(
    alice, scored, wm_text, tmp_path, capsys, monkeypatch, shipped_table
):
    token, jwks = _report(alice, scored), _jwks(alice)
    reported = verify(token, jwks).payload["hypotheses"][0]
    rebuilt = _rebuilt(monkeypatch, shipped_table, wm_text)
    from detector.decision.text import detect_text
    from detector.text.tokenizers import load_tokenizer

    # Recomputed with the rebuild's pairs, the numbers would differ from the report's.
    other = detect_text(wm_text, load_tokenizer(), [KEY_VALUE]).hypotheses[0].detection
    assert other.num_scored_tokens != reported["num_scored_tokens"]
    args = _files(tmp_path, token, jwks, wm_text, KEY_VALUE)
    assert detector_main(args) == 1
    err = capsys.readouterr().err
    assert f"filtered by n-gram table {shipped_table.content_hash[:12]}" in err
    assert rebuilt.content_hash[:12] in err and "--ngram-table" in err
    shipped_table.save(tmp_path / "old.npz")
    assert detector_main([*args, "--ngram-table", str(tmp_path / "old.npz")]) == 0
    assert f"the report's n-gram table {shipped_table.content_hash[:12]}" in capsys.readouterr().out


def test_a_report_scored_without_a_table_is_recomputed_without_one(
    alice, alice_key, wm_text, tmp_path, capsys, monkeypatch
):
    from detector.text import ngrams

    with monkeypatch.context() as patched:
        patched.setattr(ngrams, "table_for", lambda tokenizer_hash: None)
        check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
        check_score(check_id)
    token, jwks = _report(alice, check_id), _jwks(alice)
    assert verify(token, jwks).payload["hypotheses"][0]["ngram_table"] is None
    assert detector_main(_files(tmp_path, token, jwks, wm_text, KEY_VALUE)) == 0  # table shipped
    assert "no n-gram table" in capsys.readouterr().out


def test_a_report_from_before_tables_were_named_uses_the_local_table(
    alice, scored, wm_text, tmp_path, capsys
):
    from provenance.checks.models import Hypothesis

    Hypothesis.objects.filter(check_run_id=scored).update(ngram_table=None)
    token, jwks = _report(alice, scored), _jwks(alice)
    assert "ngram_table" not in verify(token, jwks).payload["hypotheses"][0]
    assert detector_main(_files(tmp_path, token, jwks, wm_text, KEY_VALUE)) == 0
    assert "the report names none" in capsys.readouterr().out


def test_an_unreadable_table_file_fails_with_its_name(alice, scored, wm_text, tmp_path, capsys):
    args = _files(tmp_path, _report(alice, scored), _jwks(alice), wm_text, KEY_VALUE)
    (tmp_path / "bad.npz").write_bytes(b"not a table")
    assert detector_main([*args, "--ngram-table", str(tmp_path / "bad.npz")]) == 1
    assert "cannot read the n-gram table" in capsys.readouterr().err


def test_a_report_names_the_decisions_best_hypothesis_and_correction_as_stored(
    alice, cast, alice_key, tokenizer_row, wm_text
):
    key_create(name="acme-second", team=cast["acme"], tokenizer=tokenizer_row, value=7)
    check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    check_score(check_id)
    check = Check.objects.get(id=check_id)
    assert check.correction == "holm" and check.best_index is not None
    # the second the decision's best, its p rounding like the first's at the basic tier
    first, second = Hypothesis.objects.filter(check_run=check).order_by("index")
    Hypothesis.objects.filter(pk=first.pk).update(adjusted_log10_p=-5.2)
    Hypothesis.objects.filter(pk=second.pk).update(adjusted_log10_p=-5.9)
    Check.objects.filter(id=check_id).update(best_index=second.index, best_key=second.key)
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    payload = verify(_report(alice, check_id), _jwks(alice)).payload
    assert payload["verdict"]["best"] == second.index
    assert payload["correction"] == "holm"
