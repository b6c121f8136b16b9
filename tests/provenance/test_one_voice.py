"""One voice: the one-voice corpus (mixed, wholly watermarked, human, short texts) sent
through every surface gets the library's decision (``detector.decision.decide`` via
``detect_text``): the same verdict, p-value, test that decided and spans from the CLI,
``/detect``, the checks API, the result page, an audit and its exports, the signed report and
``python -m detector verify``, the playground's check and a closed stream's final answer; and
under several keys, one decision (verdict, best key, corrected p-value, correction) through a
check, a stream and public verification."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rest_framework.test import APIClient

from detector.cli.main import main as detector_main
from detector.decision.combined import strength_band
from detector.decision.decide import CORRECTION
from detector.decision.family import flagged
from detector.decision.rule import too_short
from detector.decision.text import detect_text
from detector.text.tokenizers import load_tokenizer
from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Check
from provenance.checks.services import check_score
from provenance.checks.templatetags.provenance_tags import pvalue
from provenance.keys.services import key_create, key_publish
from provenance.playground.models import Conversation, Message
from provenance.playground.services import reply_check
from provenance.public.families import MIN_WORDS, words
from provenance.public.services import partner_create
from provenance.streams.models import Stream
from tests.detector.decision.one_voice import KEY, corpus
from tests.provenance.keys.test_selectors import finished_calibration

pytestmark = pytest.mark.django_db
PUBLIC_VERIFY = "/api/public/v1/verify"
PAGE_VERDICT = {
    "watermarked": "watermarked",
    "not_watermarked": "not-watermarked",
    "inconclusive": "inconclusive",
}


@pytest.fixture(scope="module")
def expected():
    """The library's decision on every corpus text: what every surface must answer."""
    tok = load_tokenizer("default")
    return {name: detect_text(text, tok, [KEY]) for name, text in corpus().items()}


@pytest.fixture
def key(cast, tokenizer_row):
    made, _ = key_create(name="one-voice", team=cast["acme"], tokenizer=tokenizer_row, value=KEY)
    return made


def _same(name, got, ref, *, p_field="p_value"):
    """``got`` (an answer's dict) holds ``ref``'s verdict and p-values, exactly."""
    assert got["verdict"] == ref.verdict, name
    assert got["is_watermarked"] == ref.is_watermarked, name
    assert got["log10_p"] == ref.log10_p, name
    assert got[p_field] == ref.p_value, name


def _spans(ref):
    return [(s.start, s.end, s.start_char, s.end_char, s.log10_p) for s in ref.spans]


def _answer_spans(rows):
    return [
        (r["start_token"], r["end_token"], r["start_char"], r["end_char"], r["log10_p"])
        for r in rows
    ]


def test_the_corpus_holds_the_case_where_two_decisions_disagreed(expected):
    brief = expected["brief"]  # decided by a check, too short for public verification
    assert brief.verdict == "watermarked" and too_short([len(brief.token_ids)])
    mixed = expected["mixed"]
    assert mixed.verdict == "watermarked" and not flagged(mixed.hypotheses[0].detection)
    assert expected["marked"].verdict == "watermarked"
    assert {expected[n].verdict for n in ("human", "short", "tiny")} <= {
        "not_watermarked",
        "inconclusive",
    }


def test_every_surface_answers_the_librarys_decision(
    api_for, client, cast, key, expected, tmp_path, capsys
):
    alice = api_for("alice")
    client.force_login(cast["alice"])
    texts = corpus()
    (tmp_path / "key").write_text(str(KEY))
    (tmp_path / "jwks.json").write_text(json.dumps(client.get("/.well-known/jwks.json").json()))
    conversation = Conversation.objects.create(team=cast["acme"], user=cast["alice"])
    for name, text in texts.items():
        ref = expected[name]
        (tmp_path / name).write_text(text)
        # the CLI
        assert (
            detector_main(["detect", "--key-file", str(tmp_path / "key"), str(tmp_path / name)])
            == 0
        )
        cli = json.loads(capsys.readouterr().out)
        _same(name, cli, ref)
        assert cli["decided_by"] == ref.decided_by
        # /detect (vLLM's request and fields, the decision's p at the top level)
        detect = alice.post("/detect", {"text": text}, format="json").json()
        _same(name, detect, ref)
        assert detect["decided_by"] == ref.decided_by and _answer_spans(detect["spans"]) == _spans(
            ref
        )
        assert detect["gamma"]["log10_p"] == ref.hypotheses[0].detection.log10_p
        assert detect["gamma"]["vllm_p_value"] == ref.hypotheses[0].detection.vllm_p_value
        # the checks API
        check_id = alice.post("/api/v1/checks", {"text": text}, format="json").json()["id"]
        check_score(check_id)
        detail = alice.get(f"/api/v1/checks/{check_id}").json()
        _same(name, detail, ref)
        assert detail["decided_by"] == ref.decided_by
        assert _answer_spans(detail["spans"]) == _spans(ref)
        (h,) = detail["hypotheses"]
        assert h["decision_log10_p"] == ref.hypotheses[0].decision_log10_p
        assert h["log10_p"] == ref.hypotheses[0].detection.log10_p  # the plain Gamma test
        # the result page
        page = client.get(f"/checks/{check_id}/").content.decode()
        assert f'data-verdict="{PAGE_VERDICT[ref.verdict]}"' in page, name
        assert f'<dd id="p-value">{pvalue(ref.log10_p)}</dd>' in page, name
        # the signed report, and verify recomputing the decision from the text and the key
        token = alice.get(f"/api/v1/checks/{check_id}/report").content.decode()
        (tmp_path / "report.jws").write_text(token)
        args = [str(tmp_path / "report.jws"), "--jwks", str(tmp_path / "jwks.json")]
        args += ["--text", str(tmp_path / name), "--key-file", str(tmp_path / "key")]
        assert detector_main(["verify", *args, "--tokenizer", "default"]) == 0, name
        verified = capsys.readouterr().out
        assert f"decision log10 p {ref.hypotheses[0].decision_log10_p:.3f}" in verified
        from detector.reports.signed import verify

        jwks = json.loads((tmp_path / "jwks.json").read_text())
        verdict = verify(token, jwks).payload["verdict"]
        assert (verdict["verdict"], verdict["log10_p"]) == (ref.verdict, ref.log10_p)
        assert verdict["decided_by"] == (ref.decided_by or None)
        # the playground's check of a reply
        reply = Message.objects.create(
            conversation=conversation, role="assistant", content=text, status="done"
        )
        played = reply_check(user=cast["alice"], message=reply)
        check_score(played.id)
        played.refresh_from_db()
        assert (played.verdict, played.log10_p, played.p_value) == (
            ref.verdict,
            ref.log10_p,
            ref.p_value,
        )
        # a stream's final answer: the decision on all its tokens
        stream = alice.post("/api/v1/streams", {"key_ids": [str(key.id)]}, format="json").json()
        url = f"/api/v1/streams/{stream['id']}/append"
        final = alice.post(url, {"text": text, "final": True}, format="json").json()
        assert final["closed"] is True
        _same(name, final, ref)
        assert final["decided_by"] == ref.decided_by
        assert [(s["start_token"], s["end_token"], s["log10_p"]) for s in final["spans"]] == [
            (s.start, s.end, s.log10_p) for s in ref.spans
        ]


def test_an_audit_and_its_exports_answer_the_librarys_decision(api_for, key, expected):
    """The audit path scores its texts in one batch (``score_texts``: one detect_batch, the
    first scan windows batched); each answer is the one-by-one decision."""
    alice = api_for("alice")
    items = [{"client_id": name, "text": text} for name, text in corpus().items()]
    audit_id = alice.post("/api/v1/audits", {"texts": items}, format="json").json()["id"]
    ids = list(Check.objects.filter(audit_id=audit_id).values_list("id", flat=True))
    audit_score_chunk(audit_id, ids)
    exported = b"".join(alice.get(f"/api/v1/audits/{audit_id}/export.json").streaming_content)
    rows = {row["client_id"]: row for row in json.loads(exported)["results"]}
    assert set(rows) == set(expected)
    for name, ref in expected.items():
        _same(name, rows[name], ref)
        assert rows[name]["decided_by"] == ref.decided_by
    table = b"".join(alice.get(f"/api/v1/audits/{audit_id}/export.csv").streaming_content)
    for row in csv.DictReader(io.StringIO(table.decode())):
        ref = expected[row["client_id"]]
        assert row["verdict"] == ref.verdict
        assert float(row["log10_p"]) == ref.log10_p and float(row["p_value"]) == ref.p_value


@pytest.fixture
def several(cast, tokenizer_row):
    """The corpus's key between two others of the same team and tokenizer, two of the three
    calibrated (a measured power curve and false-positive rate to weigh and store)."""
    made = []
    for name, value in (("first", KEY + 11), ("one-voice", KEY), ("third", KEY ^ 0xBEEF)):
        key, _ = key_create(name=name, team=cast["acme"], tokenizer=tokenizer_row, value=value)
        made.append(key)
    finished_calibration(made[1])
    finished_calibration(made[2], power=False)
    return made


def test_a_check_a_stream_and_public_verification_answer_alike_under_several_keys(
    api_for, several, expected
):
    """Under three keys (two calibrated, the corpus's key between the others and the one that
    decides), every corpus text and a watermarked text too short for public verification get
    one decision through a check, a stream and public verification: a closed stream's final
    answer, spans, best key, correction and stored false-positive rate are the check's; public
    verification answers the check's verdict, names the published model of the check's best
    key with the band of its corrected p-value, and refuses (400 ``too_short``) exactly the
    texts under the public minimum: the decision's own (``detector.decision.rule.too_short``)
    or the scrubbing guard's in words (``provenance.public.families.MIN_WORDS``)."""
    alice = api_for("alice")
    key_ids = [str(key.id) for key in several]
    for key in several:
        key_publish(key=key, public_name=f"Model {key.name}")
    _, partner = partner_create(name="one voice")
    public = APIClient()
    public.credentials(HTTP_AUTHORIZATION=f"Bearer {partner}")
    tok = load_tokenizer("default")
    texts = corpus()
    watermarked = 0
    for name, text in texts.items():
        check_id = alice.post(
            "/api/v1/checks", {"text": text, "key_ids": key_ids}, format="json"
        ).json()["id"]
        check_score(check_id)
        check = alice.get(f"/api/v1/checks/{check_id}").json()
        row = Check.objects.get(id=check_id)
        assert check["correction"] == row.correction == CORRECTION, name
        # a stream of the same text
        opened = alice.post("/api/v1/streams", {"key_ids": key_ids}, format="json").json()
        url = f"/api/v1/streams/{opened['id']}/append"
        final = alice.post(url, {"text": text, "final": True}, format="json").json()
        assert final["closed"] is True, name
        for field in ("verdict", "verdict_reason", "is_watermarked", "p_value", "log10_p"):
            assert final[field] == check[field], (name, field)
        assert final["decided_by"] == check["decided_by"], name
        assert final["correction"] == check["correction"], name
        assert [(s["start_token"], s["end_token"], s["log10_p"]) for s in final["spans"]] == [
            (s["start_token"], s["end_token"], s["log10_p"]) for s in check["spans"]
        ], name
        stored = Stream.objects.get(id=opened["id"]).decision
        assert stored["best"] == row.best_index, name
        assert stored["best_key"] == check["best_key"], name
        assert stored["key_measured_fpr"] == check["key_measured_fpr"], name
        assert stored["num_hypotheses"] == len(check["hypotheses"]) == 3, name
        if check["is_watermarked"]:
            watermarked += 1
            assert final["best_key"] == check["best_key"] == "one-voice", name
            assert check["key_measured_fpr"] is not None  # the calibrated key's rate, stored
        # public verification of the same text (a partner: no proof of work); a check and a
        # stream test a text however short, public verification answers none under the
        # public minimum
        answer = public.post(PUBLIC_VERIFY, {"text": text}, format="json").json()
        if too_short([len(tok.encode(text))]) or len(words(text)) < MIN_WORDS:
            assert answer["code"] == "too_short" and "verdict" not in answer, name
            continue
        assert answer["verdict"] == check["verdict"], name
        best = check["hypotheses"][row.best_index]
        assert answer["tokens_scored"] == best["num_scored_tokens"], name
        if check["is_watermarked"]:
            assert answer["model"] == f"Model {check['best_key']}", name
            assert answer["strength"] == strength_band(check["log10_p"]), name
        else:
            assert (answer["model"], answer["strength"]) == (None, None), name
    assert watermarked >= 3  # the mixed, the wholly watermarked and the brief texts
