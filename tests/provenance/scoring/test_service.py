"""Model-assisted detection in the web product: the tokenizer's model in the registry, the
weighted test on the workers (never in a request), what is stored and shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer as HfTokenizer
from tokenizers.models import WordLevel

from generator.models import embedded_model_dir
from provenance.checks.models import Check
from provenance.keys.selectors import prepare_keys
from provenance.keys.services import RegistryError, tokenizer_default, tokenizer_model_set
from provenance.runner.processes import stop_process
from provenance.runner.redis_server import RedisServer
from provenance.scoring.service import EMBEDDED_MODEL, ScoringError, score_ids, score_text
from tests.provenance.conftest import point_celery_at, spawn_worker
from tests.waiting import wait_until


def _model_copy(tmp_path: Path, **config: object) -> Path:
    """A directory with the embedded model's config (edited) and a placeholder weights file."""
    target = tmp_path / "model"
    target.mkdir()
    data = json.loads((embedded_model_dir() / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**data, **config}))
    (target / "model.safetensors").write_bytes(b"")
    return target


def test_the_embedded_tokenizer_comes_with_the_embedded_model(db):
    assert tokenizer_default().model_path == EMBEDDED_MODEL


def test_a_model_directory_is_registered_after_checks(db):
    tokenizer = tokenizer_model_set(tokenizer_default(), str(embedded_model_dir()))
    tokenizer.refresh_from_db()
    assert tokenizer.model_path == str(embedded_model_dir()) and tokenizer.has_model
    assert not tokenizer_model_set(tokenizer, "").has_model


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("relative/model", "absolute path"),
        ("/nonexistent/model", "not a directory"),
    ],
)
def test_a_bad_model_path_is_refused_with_a_reason(db, path, message):
    with pytest.raises(RegistryError, match=message):
        tokenizer_model_set(tokenizer_default(), path)
    assert tokenizer_default().model_path == EMBEDDED_MODEL  # nothing stored


def test_a_directory_without_weights_is_refused(db, tmp_path):
    target = _model_copy(tmp_path)
    (target / "model.safetensors").unlink()
    with pytest.raises(RegistryError, match="no weights"):
        tokenizer_model_set(tokenizer_default(), str(target))


def test_a_model_with_fewer_ids_than_the_tokenizer_is_refused(db, tmp_path):
    target = _model_copy(tmp_path, vocab_size=32000)
    with pytest.raises(RegistryError, match="smaller than the tokenizer"):
        tokenizer_model_set(tokenizer_default(), str(target))


def test_a_model_whose_own_tokenizer_differs_is_refused(db, tmp_path):
    target = _model_copy(tmp_path)
    HfTokenizer(WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]")).save(
        str(target / "tokenizer.json")
    )
    with pytest.raises(RegistryError, match="another model's"):
        tokenizer_model_set(tokenizer_default(), str(target))


def test_the_admin_shows_a_bad_model_path_as_a_form_error(db, admin_client, tmp_path):
    tokenizer = tokenizer_default()
    page = admin_client.post(
        f"/admin/keys/tokenizer/{tokenizer.id}/change/",
        {"name": tokenizer.name, "model_path": str(tmp_path / "missing")},
    )
    assert page.status_code == 200 and "not a directory" in page.content.decode()
    tokenizer.refresh_from_db()
    assert tokenizer.model_path == EMBEDDED_MODEL


@pytest.mark.model
def test_the_worker_path_runs_the_weighted_test_and_the_request_path_does_not(
    alice_key, human_text, settings
):
    settings.PROVENANCE_MODEL_ASSIST = True
    tokenizer_model_set(alice_key.tokenizer, EMBEDDED_MODEL)
    alice_key.refresh_from_db()
    groups = prepare_keys([alice_key])
    assisted = score_text(human_text, groups, threshold=0.01, reading="read")
    plain = score_text(human_text, groups, threshold=0.01, reading="defer")
    assert (plain.reading, assisted.reading) == ("pending", "done")  # undecided without it
    (h,) = assisted.hypotheses
    assert h.detection.weighted is not None and plain.hypotheses[0].detection.weighted is None
    assert h.detection.log10_p == plain.hypotheses[0].detection.log10_p  # Gamma unchanged
    assert assisted.decided_by in ("gamma", "weighted")
    # The decision: Bonferroni over the localized Gamma side and the weighted test.
    loc = assisted.localizations[0]
    lowest = min(loc.log10_p, h.detection.weighted.log10_p)
    assert assisted.log10_p == pytest.approx(min(0.0, lowest + 0.30103), abs=1e-4)
    assert assisted.decided_by == (
        "weighted" if h.detection.weighted.log10_p < loc.log10_p else "gamma"
    )


@pytest.mark.model
def test_the_onnxruntime_reading_decides_as_the_torch_reading(alice_key, human_text, settings):
    from detector.reading.model import ModelAssist
    from detector.reading.ort import OrtAssist
    from provenance.scoring.service import assist_for

    settings.PROVENANCE_MODEL_ASSIST = True
    settings.PROVENANCE_READING = "torch-f32"
    tokenizer_model_set(alice_key.tokenizer, EMBEDDED_MODEL)
    alice_key.refresh_from_db()
    groups = prepare_keys([alice_key])
    torch_result = score_text(human_text, groups, threshold=0.01, reading="read")
    assert type(assist_for(alice_key.tokenizer)) is ModelAssist
    settings.PROVENANCE_READING = "ort-f32"
    assert isinstance(assist_for(alice_key.tokenizer), OrtAssist)
    ort_result = score_text(human_text, groups, threshold=0.01, reading="read")
    (t,), (o,) = torch_result.hypotheses, ort_result.hypotheses
    assert o.detection.weighted is not None and t.detection.weighted is not None
    assert o.detection.weighted.log10_p == pytest.approx(t.detection.weighted.log10_p, abs=0.02)
    assert ort_result.log10_p == pytest.approx(torch_result.log10_p, abs=0.02)
    assert (ort_result.verdict, ort_result.decided_by) == (
        torch_result.verdict,
        torch_result.decided_by,
    )


@pytest.mark.model
def test_texts_past_the_token_budget_get_the_gamma_test_alone(alice_key, human_text, settings):
    settings.PROVENANCE_MODEL_ASSIST = True
    settings.PROVENANCE_ASSIST_MAX_TOKENS = 10
    tokenizer_model_set(alice_key.tokenizer, EMBEDDED_MODEL)
    alice_key.refresh_from_db()
    result = score_text(human_text, prepare_keys([alice_key]), threshold=0.01, reading="read")
    assert result.hypotheses[0].detection.weighted is None and result.decided_by == "gamma"
    assert result.reading == "skipped"


@pytest.fixture
def assist_worker(tmp_path_factory):
    """A worker with model assistance on, on its own Redis (the session worker has it off)."""
    from provenance.celery import app

    previous = app.conf.broker_url
    server = RedisServer(tmp_path_factory.mktemp("assist-redis")).start()
    point_celery_at(server.url)
    log = tmp_path_factory.mktemp("assist-worker") / "worker.log"
    worker = spawn_worker(server.url, log, name="assist", PROVENANCE_MODEL_ASSIST="1")
    yield worker
    stop_process(worker, timeout=20)
    server.stop()
    point_celery_at(previous)


@pytest.mark.model
@pytest.mark.django_db(transaction=True)
def test_a_worker_scores_a_check_with_the_model_and_stores_the_decision(
    assist_worker, api_for, client, cast, alice_key, wm_text, human_text
):
    tokenizer_model_set(alice_key.tokenizer, EMBEDDED_MODEL)
    alice = api_for("alice")
    words = human_text[:600].split(" ")
    # Every 12th word replaced by one the model reads as very unlikely there: suspected edits.
    edited = " ".join("Xylophone" if i % 12 == 6 else w for i, w in enumerate(words))
    ids = [
        alice.post("/api/v1/checks", {"text": t}, format="json").json()["id"]
        for t in (wm_text, human_text[:600], edited)
    ]
    wait_until(lambda: Check.objects.filter(id__in=ids, status="done").count() == 3, 240, 0.2)
    marked, human, changed = (alice.get(f"/api/v1/checks/{i}").json() for i in ids)
    assert marked["is_watermarked"] is True and human["is_watermarked"] is False
    # The watermarked text is decided without the model, so it is never read (adaptive).
    assert marked["reading"] == "none" and marked["hypotheses"][0]["weighted_log10_p"] is None
    for body in (human, changed):  # undecided without the model: read
        (h,) = body["hypotheses"]
        assert body["reading"] == "done", body["reading"]
        assert h["weighted_log10_p"] is not None and h["decided_by"] in ("gamma", "weighted")
        assert body["decided_by"] == h["decided_by"]
        assert isinstance(h["weighted_suspected"], int) and h["weighted_suspected"] >= 0
    # Each "Xylophone" sets aside itself and the tokens after it whose contexts hold it.
    suspected = changed["hypotheses"][0]["weighted_suspected"]
    assert suspected > human["hypotheses"][0]["weighted_suspected"]
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{ids[0]}/")
    assert page.status_code == 200 and 'id="verdict"' in page.content.decode()
    assert ('id="decided-by"' in page.content.decode()) == (marked["decided_by"] == "weighted")
    page = client.get(f"/checks/{ids[2]}/").content.decode()
    assert 'id="suspected-edits"' in page and f"{suspected} scored tokens were set aside" in page


def test_token_ids_are_scored_as_the_text_they_encode(alice_key, wm_text, settings):
    """``score_ids`` (a stream's path) makes the decision ``score_text`` makes on the text
    the ids encode: same document, same verdict and spans, same stored figures."""
    groups = prepare_keys([alice_key])
    ids = groups[0].loaded.encode(wm_text)
    by_ids = score_ids(ids, groups, threshold=settings.PROVENANCE_THRESHOLD)
    by_text = score_text(wm_text, groups, threshold=settings.PROVENANCE_THRESHOLD)
    assert by_text.is_watermarked and by_ids.is_watermarked
    assert (by_ids.verdict, by_ids.log10_p, by_ids.best) == (
        by_text.verdict,
        by_text.log10_p,
        by_text.best,
    )
    assert [(s["start_token"], s["end_token"]) for s in by_ids.spans] == [
        (s["start_token"], s["end_token"]) for s in by_text.spans
    ]
    assert by_ids.key_measured_fpr == by_text.key_measured_fpr
    assert by_ids.hypotheses[0].ngram_table == by_text.hypotheses[0].ngram_table != ""
    with pytest.raises(ScoringError, match="one key group"):
        score_ids(ids, groups * 2, threshold=settings.PROVENANCE_THRESHOLD)
