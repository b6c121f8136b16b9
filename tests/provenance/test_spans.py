"""Localized spans wherever a verdict is shown: API check detail, /detect, audit exports and
the result page. The text is real prose with one watermarked passage in the middle."""

from __future__ import annotations

import csv
import io
import json

import pytest

from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Check
from provenance.checks.services import check_score
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.watermark import watermarked_text

SPAN_FIELDS = {
    "start_token",
    "end_token",
    "start_char",
    "end_char",
    "num_scored_tokens",
    "p_value",
    "log10_p",
    "key_id",
}


@pytest.fixture(scope="module")
def mixed() -> tuple[str, int, int]:
    """About 1,800 human tokens around 160 watermarked ones; (text, passage start, end)."""
    from benchmarks.corpus import english_prose

    prose = english_prose(16_000)
    cut = prose.rfind(" ", 0, 8_000)
    passage = " " + watermarked_text(KEY_VALUE, 160, seed=11)
    text = prose[:cut] + passage + prose[cut:]
    return text, cut, cut + len(passage)


def _assert_one_span_on_the_passage(spans, mixed, key_id) -> None:
    text, start, end = mixed
    assert len(spans) == 1 and set(spans[0]) >= SPAN_FIELDS
    span = spans[0]
    assert abs(span["start_char"] - start) < 120 and abs(span["end_char"] - end) < 120
    assert span["key_id"] == str(key_id) and span["p_value"] <= 0.01
    assert span["end_token"] - span["start_token"] >= span["num_scored_tokens"] > 100


def test_the_check_detail_lists_the_span(api_for, alice_key, mixed):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": mixed[0]}, format="json").json()["id"]
    check_score(check_id)
    body = alice.get(f"/api/v1/checks/{check_id}").json()
    assert body["is_watermarked"] is True
    _assert_one_span_on_the_passage(body["spans"], mixed, alice_key.id)


def test_detect_answers_with_spans(api_for, alice_key, mixed):
    body = api_for("alice").post("/detect", {"text": mixed[0]}, format="json").json()
    _assert_one_span_on_the_passage(body["spans"], mixed, alice_key.id)
    assert str(KEY_VALUE) not in json.dumps(body)


def test_human_text_has_no_span(api_for, alice_key):
    from benchmarks.corpus import english_prose

    body = api_for("alice").post("/detect", {"text": english_prose(12_000)}, format="json").json()
    assert body["spans"] == [] and body["is_watermarked"] is False


def test_audit_exports_count_spans_and_give_the_longest(api_for, alice_key, mixed):
    alice = api_for("alice")
    items = [{"client_id": "mixed", "text": mixed[0]}, {"client_id": "human", "text": "plain."}]
    audit_id = alice.post("/api/v1/audits", {"texts": items}, format="json").json()["id"]
    ids = list(Check.objects.filter(audit_id=audit_id).values_list("id", flat=True))
    audit_score_chunk(audit_id, ids)
    raw = b"".join(alice.get(f"/api/v1/audits/{audit_id}/export.csv").streaming_content)
    rows = {r["client_id"]: r for r in csv.DictReader(io.StringIO(raw.decode()))}
    assert rows["mixed"]["num_spans"] == "1" and rows["human"]["num_spans"] == "0"
    assert abs(int(rows["mixed"]["longest_span_start_char"]) - mixed[1]) < 120
    raw = b"".join(alice.get(f"/api/v1/audits/{audit_id}/export.json").streaming_content)
    results = {r["client_id"]: r for r in json.loads(raw)["results"]}
    assert results["mixed"]["num_spans"] == 1 and results["human"]["longest_span_end_char"] is None


def test_the_result_page_says_where_the_span_is_and_frames_its_tokens(
    client, cast, alice_key, mixed
):
    client.force_login(cast["alice"])
    response = client.post("/", {"text": mixed[0]})
    check_id = response["Location"].rstrip("/").split("/")[-1]
    check_score(check_id)
    page = client.get(f"/checks/{check_id}/").content.decode()
    check = Check.objects.get(id=check_id)
    span = check.spans[0]
    words = (
        f"Tokens {span['start_token'] + 1:,}–{span['end_token']:,}, characters "
        f"{span['start_char'] + 1:,}–{span['end_char']:,}, carry the watermark of key “acme-main”"
    )
    assert words in page
    # The page's script frames the tokens inside these character ranges (test_browser).
    assert f'data-spans="{span["start_char"]},{span["end_char"]}"' in page


def test_the_check_export_carries_the_spans(api_for, alice_key, mixed):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": mixed[0]}, format="json").json()["id"]
    check_score(check_id)
    as_json = json.loads(alice.get(f"/api/v1/checks/{check_id}/export.json").content)
    _assert_one_span_on_the_passage(as_json["spans"], mixed, alice_key.id)
    raw = alice.get(f"/api/v1/checks/{check_id}/export.csv").content.decode()
    row = next(csv.DictReader(io.StringIO(raw)))
    assert row["num_spans"] == "1"
    assert int(row["longest_span_start_char"]) == as_json["spans"][0]["start_char"]
