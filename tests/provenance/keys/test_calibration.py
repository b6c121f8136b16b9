"""A key's calibration: its measured false-positive rate per genre of human text, stored,
shown on the keys page, the admin and the verdicts, and run by a real worker."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from celery.signals import before_task_publish
from django.utils import timezone

from detector.reports.signed import verify
from detector.text.corpora import Corpus
from provenance.accounts.models import Membership
from provenance.checks.services import check_score
from provenance.keys import calibration
from provenance.keys.models import KeyCalibration
from provenance.keys.selectors import key_measured_fpr, prepare_keys, tokens_needed
from provenance.scoring import service as scoring
from tests.provenance.conftest import KEY_VALUE
from tests.waiting import wait_until


def _calibrate(key, texts: int = 12) -> KeyCalibration:
    run = calibration.calibration_request(
        key=key, texts_per_genre=texts, power_prompts=0, publish_task=False
    )
    calibration.calibration_run(str(run.id))
    run.refresh_from_db()
    return run


@pytest.fixture
def watermarked_corpus(monkeypatch, wm_text):
    """Human text replaced by watermarked text: every chunk is (rightly) flagged, which is
    what a key that flags human text looks like from the outside."""

    def fake(tokenizer, genre, limit, size=250):
        return Corpus(genre, (wm_text,) * limit, f"watermarked stand-in for {genre}")

    monkeypatch.setattr(calibration, "corpus", fake)


def test_a_calibration_stores_each_genres_rate_with_its_exact_interval(alice_key, settings):
    run = _calibrate(alice_key)
    assert run.status == "done" and run.threshold == settings.PROVENANCE_THRESHOLD
    rates = {r.genre: r for r in run.rates.all()}
    assert set(rates) == {"prose", "code", "templated"}
    for rate in rates.values():
        assert rate.texts == 12 and 0 <= rate.flagged <= 1
        assert rate.ci_low <= rate.rate <= rate.ci_high and rate.ci_high > 0.2  # n=12 is wide
        assert ": 12 chunks of 250" in rate.corpus and not rate.above_threshold
    assert run.power == {} and "no prompts" in run.power_note


def test_the_count_is_the_web_decision_on_the_same_texts(alice_key, settings):
    run = _calibrate(alice_key, texts=20)
    groups = prepare_keys([alice_key])
    human = calibration.corpus(groups[0].loaded, "code", 20)
    results = scoring.score_texts(list(human.texts), groups, threshold=run.threshold)
    assert run.rates.get(genre="code").flagged == sum(r.is_watermarked for r in results)
    assert calibration.score_texts is scoring.score_texts  # one decision, measured as deployed


def test_a_key_that_flags_the_corpus_is_flagged(alice_key, watermarked_corpus):
    run = _calibrate(alice_key, texts=30)
    assert all(r.flagged == 30 and r.above_threshold for r in run.rates.all())
    measured = key_measured_fpr(alice_key)
    assert measured["above_threshold"] is True
    assert measured["genres"]["prose"] == {
        "rate": 1.0,
        "ci_low": pytest.approx(0.8843, abs=1e-4),
        "ci_high": 1.0,
        "texts": 30,
        "flagged": 30,
        "above_threshold": True,
    }


def test_power_is_not_measured_without_a_registered_model(alice_key, monkeypatch):
    monkeypatch.setattr(calibration, "model_for", lambda tokenizer: None)
    run = calibration.calibration_request(
        key=alice_key, texts_per_genre=3, power_prompts=2, power_tokens=25, publish_task=False
    )
    calibration.calibration_run(str(run.id))
    run.refresh_from_db()
    assert run.power == {} and "no model is registered" in run.power_note
    assert tokens_needed(alice_key) is None


@pytest.mark.model
@pytest.mark.slow
def test_the_power_curve_is_measured_with_the_embedded_model(alice_key):
    """Generation on the CPU with the transformers backend: 2 prompts x 50 tokens x 2
    temperatures (about half a minute on a quiet core)."""
    run = calibration.calibration_request(
        key=alice_key, texts_per_genre=3, power_prompts=2, power_tokens=50, publish_task=False
    )
    calibration.calibration_run(str(run.id))
    run.refresh_from_db()
    assert run.status == "done", run.failure_reason
    assert set(run.power) == {"1.0", "0.7"}
    points = run.power["1.0"]["points"]
    assert [p["tokens"] for p in points] == [10, 25, 50] and all(p["texts"] == 2 for p in points)
    # At T=1 the embedded model's 50-token answers carry a strong watermark.
    assert points[-1]["detected"] == 2
    needed = run.power["1.0"]["tokens_needed"]
    assert needed is not None and needed <= 50
    assert tokens_needed(alice_key, 1.0) == run.power["1.0"]["scored_tokens_needed"]


def test_the_keys_page_shows_rates_intervals_counts_and_the_flag(
    client, cast, alice_key, watermarked_corpus
):
    _calibrate(alice_key, texts=10)
    client.force_login(cast["bob"])
    page = client.get("/keys/").content.decode()
    assert "Flagged" in page and "templated text" in page
    assert "1.0000" in page and "0.6915 – 1.0000" in page  # 10/10 with its interval
    assert "Not calibrated yet" not in page


def test_a_check_names_the_best_keys_measured_rate(client, cast, alice_key, wm_text, api_for):
    _calibrate(alice_key, texts=10)
    check = check_score_new(cast, wm_text)
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{check.id}/").content.decode()
    assert 'id="key-fpr"' in page and "(95% interval" in page
    body = api_for("alice").get(f"/api/v1/checks/{check.id}").json()
    assert set(body["key_measured_fpr"]["genres"]) == {"prose", "code", "templated"}
    detect = api_for("alice").post("/detect", {"text": wm_text}, format="json").json()
    assert detect["key_measured_fpr"] == body["key_measured_fpr"]
    inline = api_for("alice").post("/api/v1/checks?wait=5", {"text": wm_text}, format="json")
    assert inline.json()["key_measured_fpr"] == body["key_measured_fpr"]  # as read back


def test_an_inline_check_reports_the_calibration_finished_just_before_it(
    cast, alice_key, wm_text, api_for, watermarked_corpus
):
    alice = api_for("alice")

    def fpr() -> dict | None:
        answer = alice.post("/api/v1/checks?wait=5", {"text": wm_text}, format="json")
        return answer.json()["key_measured_fpr"]

    assert fpr() is None
    first = _calibrate(alice_key, texts=4)
    assert fpr()["measured_at"] == first.finished_at.isoformat()
    second = _calibrate(alice_key, texts=6)  # the calibration read once per process is not kept
    assert fpr()["measured_at"] == second.finished_at.isoformat()
    assert fpr()["genres"]["prose"]["texts"] == 6


def test_a_check_against_an_uncalibrated_key_says_so(client, cast, alice_key, wm_text, api_for):
    check = check_score_new(cast, wm_text)
    client.force_login(cast["alice"])
    assert "not measured yet" in client.get(f"/checks/{check.id}/").content.decode()
    assert api_for("alice").get(f"/api/v1/checks/{check.id}").json()["key_measured_fpr"] is None


def alice_key_id(cast):
    return cast["acme"].keys.get().id


def check_score_new(cast, text):
    from provenance.checks.models import Check

    check = Check.objects.create(
        team=cast["acme"],
        submitted_by=cast["alice"],
        text=text,
        key_ids=[str(alice_key_id(cast))],
        threshold=0.01,
    )
    check_score(check.id)
    check.refresh_from_db()
    return check


@pytest.mark.django_db(transaction=True)
def test_a_team_admin_calibrates_from_the_keys_page_with_a_real_worker(
    celery_worker, client, cast, alice_key, settings
):
    settings.PROVENANCE_CALIBRATION_TEXTS = 8
    settings.PROVENANCE_CALIBRATION_POWER_PROMPTS = 0  # the slow test measures power
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    client.force_login(cast["alice"])
    sent: list[dict] = []

    def keep(sender=None, body=None, **_):
        sent.append({"task": sender, "args": body[0] if isinstance(body, tuple) else body})

    before_task_publish.connect(keep, weak=False)
    try:
        assert "Calibrate</button>" in client.get("/keys/").content.decode()
        assert client.post(f"/keys/{alice_key.id}/calibrate").status_code == 302
        page = client.get("/keys/").content.decode()
        # The worker may finish eight texts before the page is read: the page must say
        # so whenever the run was still live after it was drawn (test_views pins the text).
        if KeyCalibration.objects.get(key=alice_key).status in ("pending", "running"):
            assert "queued or running" in page
    finally:
        before_task_publish.disconnect(keep)
    run = KeyCalibration.objects.get(key=alice_key)
    wait_until(lambda: KeyCalibration.objects.get(id=run.id).status in ("done", "failed"), 180)
    run.refresh_from_db()
    assert run.status == "done", run.failure_reason
    assert run.rates.count() == 3 and all(r.texts == 8 for r in run.rates.all())
    assert sent == [{"task": calibration.CALIBRATE, "args": [str(run.id)]}]  # the id only
    page = client.get("/keys/").content.decode()
    assert "Not calibrated yet" not in page and "(8" not in json.dumps(sent)
    log = celery_worker.log_path.read_text()
    assert str(KEY_VALUE) not in log and f"{KEY_VALUE:x}" not in log


def test_a_calibration_lost_past_its_time_limit_no_longer_blocks_a_new_one(
    client, cast, alice_key, settings
):
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    lost = calibration.calibration_request(key=alice_key, publish_task=False)
    old = timezone.now() - timedelta(seconds=settings.PROVENANCE_CALIBRATION_TIME_LIMIT + 400)
    KeyCalibration.objects.filter(id=lost.id).update(created_at=old)
    client.force_login(cast["alice"])
    assert "Calibrate</button>" in client.get("/keys/").content.decode()
    assert client.post(f"/keys/{alice_key.id}/calibrate").status_code == 302
    lost.refresh_from_db()
    assert lost.status == "failed" and "lost" in lost.failure_reason
    assert KeyCalibration.objects.filter(key=alice_key, status="pending").count() == 1


def test_a_calibrated_power_curve_reaches_the_three_way_verdict(alice_key):
    run = _calibrate(alice_key, texts=3)
    curve = {"points": [], "tokens_needed": 150, "top_p": 1.0}
    run.power = {
        "1.0": {**curve, "scored_tokens_needed": 90},
        "0.7": {**curve, "scored_tokens_needed": 140},
    }
    run.save(update_fields=["power"])
    assert tokens_needed(alice_key) == 140 and tokens_needed(alice_key, 1.0) == 90
    (group,) = prepare_keys([alice_key])
    assert group.tokens_needed == (140,)


def test_a_later_calibration_does_not_change_an_old_answer(
    client, cast, alice_key, wm_text, api_for, monkeypatch
):
    first = _calibrate(alice_key, texts=10)
    old = check_score_new(cast, wm_text)
    before = api_for("alice").get(f"/api/v1/checks/{old.id}").json()["key_measured_fpr"]
    assert before["measured_at"] == first.finished_at.isoformat()
    assert before["above_threshold"] is False
    # Recalibrated on a corpus the key flags entirely: new answers name it, old ones do not.
    monkeypatch.setattr(
        calibration,
        "corpus",
        lambda tokenizer, genre, limit, size=250: Corpus(genre, (wm_text,) * limit, "stand-in"),
    )
    second = _calibrate(alice_key, texts=10)
    assert second.finished_at > first.finished_at
    after = api_for("alice").get(f"/api/v1/checks/{old.id}").json()["key_measured_fpr"]
    assert after == before
    token = api_for("alice").get(f"/api/v1/checks/{old.id}/report").content.decode()
    jwks = api_for("alice").get("/.well-known/jwks.json").json()
    assert verify(token, jwks).payload["verdict"]["key_measured_fpr"] == before
    client.force_login(cast["alice"])
    assert "Flagged" not in client.get(f"/checks/{old.id}/").content.decode()
    new = check_score_new(cast, wm_text)
    fresh = api_for("alice").get(f"/api/v1/checks/{new.id}").json()["key_measured_fpr"]
    assert fresh["above_threshold"] is True and fresh["genres"]["code"]["rate"] == 1.0
    assert fresh["genres"]["code"]["above_threshold"] is True
    assert "Flagged" in client.get(f"/checks/{new.id}/").content.decode()
    flags = [
        api_for("alice").get(f"/api/v1/checks/{c.id}/export.csv").content.decode()
        for c in (old, new)
    ]
    rows = [next(csv.DictReader(io.StringIO(f))) for f in flags]
    assert [r["key_fpr_above_threshold"] for r in rows] == ["False", "True"]


def test_a_check_scored_before_any_calibration_stays_unmeasured(
    client, cast, alice_key, wm_text, api_for
):
    check = check_score_new(cast, wm_text)
    _calibrate(alice_key, texts=10)
    assert api_for("alice").get(f"/api/v1/checks/{check.id}").json()["key_measured_fpr"] is None
    client.force_login(cast["alice"])
    assert "not measured yet" in client.get(f"/checks/{check.id}/").content.decode()


def test_the_migration_gives_old_checks_the_calibration_latest_when_they_finished(
    cast, alice_key, wm_text
):
    import importlib

    from django.apps import apps

    from provenance.checks.models import Check

    migration = importlib.import_module("provenance.checks.migrations.0012_check_key_measured_fpr")
    first = _calibrate(alice_key, texts=10)
    between = check_score_new(cast, wm_text)
    second = _calibrate(alice_key, texts=11)
    after = check_score_new(cast, wm_text)
    earlier = check_score_new(cast, wm_text)
    Check.objects.filter(id=earlier.id).update(finished_at=first.finished_at - timedelta(seconds=1))
    Check.objects.update(key_measured_fpr=None)  # as scored before the field existed
    migration.backfill(apps, None)
    stored = dict(Check.objects.values_list("id", "key_measured_fpr"))
    assert stored[earlier.id] is None
    assert stored[between.id]["measured_at"] == first.finished_at.isoformat()
    assert stored[after.id]["measured_at"] == second.finished_at.isoformat()
    assert stored[after.id] == key_measured_fpr(alice_key)  # the same shape as the API's
    assert stored[after.id]["genres"]["prose"]["texts"] == 11


def test_without_model_assistance_the_assisted_rate_says_why_it_is_missing(alice_key, settings):
    settings.PROVENANCE_MODEL_ASSIST = False
    run = _calibrate(alice_key, texts=4)
    assert run.assisted == {"note": "model assistance is off (PROVENANCE_MODEL_ASSIST)"}


@pytest.mark.model
def test_with_model_assistance_the_assisted_decision_is_measured_as_the_workers_decide(
    alice_key, settings, client, cast, capsys
):
    settings.PROVENANCE_MODEL_ASSIST = True
    settings.PROVENANCE_CALIBRATION_ASSIST_TEXTS = 2
    settings.PROVENANCE_ASSIST_MAX_TOKENS = 300  # one 250-token chunk per model read
    run = _calibrate(alice_key, texts=5)
    genres = run.assisted["genres"]
    assert set(genres) == {"prose", "code", "templated"}
    groups = prepare_keys([alice_key])
    for genre, measured in genres.items():
        assert measured["texts"] == 2 and measured["ci_low"] <= measured["rate"]
        texts = list(calibration.corpus(groups[0].loaded, genre, 2).texts)
        again = [
            scoring.score_texts([t], groups, threshold=run.threshold, reading="read")[0]
            for t in texts
        ]  # the adaptive decision: read where the model-free stage left the chunk undecided
        assert all(r.reading in ("none", "done") for r in again)
        assert all(
            (r.hypotheses[0].detection.weighted is not None) == (r.reading == "done") for r in again
        )
        assert measured["flagged"] == sum(r.is_watermarked for r in again)
    client.force_login(cast["bob"])
    page = client.get("/keys/").content.decode()
    assert 'class="grid assisted"' in page and "model-assisted test" in page
