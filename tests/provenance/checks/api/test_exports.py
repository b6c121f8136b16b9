"""A single check leaves the app: JSON and CSV exports, and a print stylesheet."""

from __future__ import annotations

import csv
import io
import json

import pytest

from provenance.checks.api.exports import CheckExportApi
from provenance.checks.fields import EXPORT_FIELDS, HYPOTHESIS_EXPORT
from provenance.checks.services import check_score


@pytest.fixture
def scored(api_for, alice_key, wm_text):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    check_score(check_id)
    return check_id


def test_the_json_export_is_the_detail_answer_as_a_file(api_for, scored, wm_text):
    response = api_for("alice").get(f"/api/v1/checks/{scored}/export.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="check-{scored}.json"'
    body = json.loads(response.content)
    assert body["id"] == scored and body["text"] == wm_text and body["is_watermarked"] is True
    assert body["verdict"] == "watermarked" and body["verdict_reason"]
    assert body["hypotheses"][0]["key_name"] == "acme-main"
    assert body == api_for("alice").get(f"/api/v1/checks/{scored}").json()


def test_the_csv_export_has_one_row_per_hypothesis(api_for, scored, cast, tokenizer_row):
    from provenance.keys.services import key_create

    key_create(name="second", team=cast["acme"], tokenizer=tokenizer_row)
    response = api_for("bob").get(f"/api/v1/checks/{scored}/export.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    reader = csv.DictReader(io.StringIO(response.content.decode()))
    assert reader.fieldnames == [*EXPORT_FIELDS, *HYPOTHESIS_EXPORT]
    rows = list(reader)
    assert len(rows) == 1  # the check was scored against the one key of that time
    row = rows[0]
    assert row["check_id"] == scored and row["is_watermarked"] == "True"
    assert row["key_name"] == "acme-main" and row["tokenizer_name"]
    assert float(row["hypothesis_log10_p"]) < -2


def test_a_pending_check_exports_one_row_without_hypotheses(api_for, alice_key):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": "a pending text"}, format="json").json()["id"]
    rows = list(
        csv.DictReader(
            io.StringIO(alice.get(f"/api/v1/checks/{check_id}/export.csv").content.decode())
        )
    )
    assert len(rows) == 1 and rows[0]["status"] == "pending" and rows[0]["key_name"] == ""


def test_other_teams_cannot_export(api_for, scored):
    assert api_for("charlie").get(f"/api/v1/checks/{scored}/export.json").status_code == 404
    assert api_for("charlie").get(f"/api/v1/checks/{scored}/export.csv").status_code == 404


def test_the_result_page_links_the_exports_and_a_print_stylesheet(client, cast, scored):
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{scored}/").content.decode()
    assert f"/api/v1/checks/{scored}/export.json" in page
    assert f"/api/v1/checks/{scored}/export.csv" in page
    assert 'href="/static/provenance/print.css" media="print"' in page
    # the page's session works for the download link (no token needed)
    assert client.get(f"/api/v1/checks/{scored}/export.csv").status_code == 200


def test_the_export_is_refused_to_another_team_and_signed_out(api_for, client, scored):
    assert api_for("charlie").get(f"/api/v1/checks/{scored}/export.json").status_code == 404
    assert client.get(f"/api/v1/checks/{scored}/export.csv").status_code in (401, 403)
    assert not hasattr(CheckExportApi, "post")  # a file to read, nothing to write
    assert api_for("alice").post(f"/api/v1/checks/{scored}/export.json").status_code == 405
