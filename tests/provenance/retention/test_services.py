"""Retention and deletion: texts older than the team's period are purged (verdict, p-values
and the text's SHA-256 stay); the submitter or a team admin deletes a check or an audit at
once, bob (a plain member) and charlie (another team) cannot."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.utils import timezone

from provenance.accounts.models import Membership
from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Check, Hypothesis
from provenance.checks.services import check_create, check_score
from provenance.checks.services.deletion import PURGED_BEFORE_SCORING
from provenance.playground.models import Conversation, Message
from provenance.retention.services import retention_days
from provenance.streams.models import Stream
from provenance.usage.models import DetectionLog


def _scored(user, text: str, days_old: float = 0) -> Check:
    check = check_create(user=user, text=text)
    check_score(check.id)
    if days_old:
        Check.objects.filter(id=check.id).update(
            created_at=timezone.now() - timedelta(days=days_old)
        )
    return Check.objects.get(id=check.id)


def _assert_purged(check: Check, text: str, digest: bool = True) -> None:
    check.refresh_from_db()
    assert check.text == "" and check.purged_at is not None
    assert check.token_data is None and check.heatmap_compact is None
    if digest:
        assert check.text_sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_the_purge_removes_texts_past_the_retention_period_and_keeps_the_verdict(
    cast, alice_key, wm_text
):
    old = _scored(cast["alice"], wm_text, days_old=31)
    fresh = _scored(cast["alice"], wm_text, days_old=29)
    assert old.heatmap_compact and old.token_data  # stored when scored
    verdict = (old.is_watermarked, old.verdict, old.p_value, old.log10_p, old.num_scored_tokens)
    p_values = list(Hypothesis.objects.filter(check_run=old).values_list("log10_p", "p_value"))
    call_command("checks_purge")
    _assert_purged(old, wm_text)
    assert (old.is_watermarked, old.verdict, old.p_value, old.log10_p, old.num_scored_tokens) == (
        verdict
    )
    assert verdict[0] is True and len(p_values) == 1
    assert list(Hypothesis.objects.filter(check_run=old).values_list("log10_p", "p_value")) == (
        p_values
    )
    fresh.refresh_from_db()
    assert fresh.text == wm_text and fresh.token_data and fresh.purged_at is None


def test_a_team_may_shorten_its_retention_period_but_not_lengthen_it(cast, alice_key, settings):
    settings.PROVENANCE_RETENTION_DAYS = 30
    acme, other = cast["acme"], cast["other"]
    acme.retention_days = 7
    acme.save()
    acme_old = _scored(cast["alice"], "an essay of acme", days_old=8)
    other_old = Check.objects.create(
        team=other,
        submitted_by=cast["charlie"],
        text="an essay of other",
        key_ids=[],
        threshold=0.01,
    )
    Check.objects.filter(id=other_old.id).update(created_at=timezone.now() - timedelta(days=8))
    call_command("checks_purge")
    _assert_purged(acme_old, "an essay of acme")
    other_old.refresh_from_db()
    assert other_old.text == "an essay of other"
    other.retention_days = 90  # longer than the deployment allows: 30 days still apply
    other.save()
    assert (retention_days(acme), retention_days(other)) == (7, 30)
    Check.objects.filter(id=other_old.id).update(created_at=timezone.now() - timedelta(days=31))
    call_command("checks_purge")
    _assert_purged(other_old, "an essay of other", digest=False)


def test_a_check_not_scored_before_its_purge_fails_instead_of_scoring_an_empty_text(
    cast, alice_key
):
    check = check_create(user=cast["alice"], text="waiting for the broker")
    Check.objects.filter(id=check.id).update(created_at=timezone.now() - timedelta(days=40))
    call_command("checks_purge")
    check_score(check.id)
    check.refresh_from_db()
    assert check.status == "failed" and check.failure_reason == PURGED_BEFORE_SCORING
    assert not Hypothesis.objects.filter(check_run=check).exists()


def test_a_check_purged_while_it_is_scored_gets_no_per_token_data_back(cast, alice_key, wm_text):
    from provenance.checks.services.claims import checks_claim
    from provenance.checks.services.results import keys_for_scoring, results_store
    from provenance.keys.selectors import prepare_keys
    from provenance.scoring.service import score_text

    purged, kept = (check_create(user=cast["alice"], text=wm_text) for _ in range(2))
    for check, purge in ((purged, True), (kept, False)):
        (mine,) = checks_claim([check.id], f"claim-{check.id}", ("id", "text", "key_ids"))
        groups = prepare_keys(keys_for_scoring(mine.key_ids))
        result = score_text(mine.text, groups, threshold=0.01)
        if purge:  # the retention sweep meanwhile
            Check.objects.filter(id=check.id).update(text="", purged_at=timezone.now())
        assert results_store([(mine, result)], f"claim-{check.id}") == 1
        check.refresh_from_db()
        assert check.status == "done" and check.verdict == result.verdict
        if purge:
            assert check.token_data is None and check.heatmap_compact is None
        else:
            assert check.token_data and check.heatmap_compact is not None


def test_alice_deletes_her_check_and_it_is_gone_from_api_pages_and_heatmap(
    api_for, client, cast, alice_key, wm_text
):
    check = _scored(cast["alice"], wm_text)
    alice = api_for("alice")
    assert alice.delete(f"/api/v1/checks/{check.id}").status_code == 204
    assert alice.get(f"/api/v1/checks/{check.id}").status_code == 404
    assert alice.get(f"/api/v1/checks/{check.id}?tokens=1").status_code == 404
    assert alice.get(f"/api/v1/checks/{check.id}/report").status_code == 404
    for fmt in ("json", "csv"):
        assert alice.get(f"/api/v1/checks/{check.id}/export.{fmt}").status_code == 404
    assert alice.get("/api/v1/checks").json()["count"] == 0
    client.force_login(cast["alice"])
    assert client.get(f"/checks/{check.id}/").status_code == 404
    assert str(check.id) not in client.get("/checks/").content.decode()
    _assert_purged(check, wm_text)
    assert not Check.objects.filter(token_data__isnull=False).exists()
    log = DetectionLog.objects.get(check_run=check)
    assert log.text_sha256 == hashlib.sha256(wm_text.encode()).hexdigest()


def test_charlie_cannot_delete_alices_check(api_for, cast, alice_key, wm_text):
    check = _scored(cast["alice"], wm_text)
    assert api_for("charlie").delete(f"/api/v1/checks/{check.id}").status_code == 404
    check.refresh_from_db()
    assert check.text == wm_text and check.deleted_at is None


def test_bob_may_delete_alices_check_only_as_a_team_admin(api_for, cast, alice_key, wm_text):
    check = _scored(cast["alice"], wm_text)
    bob = api_for("bob")
    response = bob.delete(f"/api/v1/checks/{check.id}")
    assert response.status_code == 403 and "submitter or a team admin" in response.json()["detail"]
    check.refresh_from_db()
    assert check.text == wm_text and check.deleted_at is None
    Membership.objects.filter(user=cast["bob"]).update(is_admin=True)
    assert bob.delete(f"/api/v1/checks/{check.id}").status_code == 204
    _assert_purged(check, wm_text)


def test_the_result_page_deletes_after_confirmation(client, cast, alice_key, wm_text):
    check = _scored(cast["alice"], wm_text)
    client.force_login(cast["bob"])
    assert 'id="delete-check"' not in client.get(f"/checks/{check.id}/").content.decode()
    assert client.post(f"/checks/{check.id}/delete/").status_code == 403
    client.force_login(cast["alice"])
    assert 'id="delete-check"' in client.get(f"/checks/{check.id}/").content.decode()
    confirm = client.get(f"/checks/{check.id}/delete/").content.decode()
    assert 'id="confirm-delete"' in confirm
    check.refresh_from_db()
    assert check.deleted_at is None  # asking is not deleting
    response = client.post(f"/checks/{check.id}/delete/")
    assert response.status_code == 302 and response["Location"] == "/checks/"
    assert client.get(f"/checks/{check.id}/").status_code == 404
    _assert_purged(check, wm_text)


def test_a_purged_check_page_shows_the_verdict_and_the_hash_but_no_text(
    client, cast, alice_key, wm_text
):
    check = _scored(cast["alice"], wm_text, days_old=31)
    call_command("checks_purge")
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{check.id}/").content.decode()
    assert 'data-verdict="watermarked"' in page and 'id="purged"' in page
    assert check.text_sha256 in page and wm_text[:40] not in page
    body = client.get(f"/api/v1/checks/{check.id}?tokens=1").json()
    assert body["text"] == "" and body["heatmap"] is None and body["purged_at"]
    report = client.get(f"/checks/{check.id}/report/").content.decode()
    assert check.text_sha256 in report and wm_text[:40] not in report


@pytest.fixture
def scored_audit(api_for, cast, alice_key, wm_text, human_text):
    texts = [
        {"client_id": "essay-1", "text": wm_text},
        {"client_id": "essay-2", "text": human_text},
    ]
    audit_id = api_for("alice").post("/api/v1/audits", {"texts": texts}, format="json").json()["id"]
    ids = [str(i) for i in Check.objects.filter(audit_id=audit_id).values_list("id", flat=True)]
    audit_score_chunk(audit_id, ids)
    return audit_id


def test_alice_deletes_an_audit_and_its_items_exports_and_texts_go(
    api_for, cast, scored_audit, wm_text
):
    alice = api_for("alice")
    assert api_for("charlie").delete(f"/api/v1/audits/{scored_audit}").status_code == 404
    assert api_for("bob").delete(f"/api/v1/audits/{scored_audit}").status_code == 403
    assert alice.delete(f"/api/v1/audits/{scored_audit}").status_code == 204
    for url in ["", "/items", "/export.csv", "/export.json"]:
        assert alice.get(f"/api/v1/audits/{scored_audit}{url}").status_code == 404, url
    assert alice.get("/api/v1/audits").json()["count"] == 0
    items = Check.objects.filter(audit_id=scored_audit)
    assert items.count() == 2 and not items.exclude(text="").exists()
    assert all(item.is_watermarked is not None and item.text_sha256 for item in items)
    assert not items.filter(heatmap_compact__isnull=False).exists()
    assert not items.filter(token_data__isnull=False).exists()
    # The detection log's row for the audit stays; each item keeps its text's digest.
    assert DetectionLog.objects.get(audit_id=scored_audit).num_texts == 2


def test_the_audit_page_deletes_after_confirmation(client, cast, scored_audit, wm_text):
    items = list(Check.objects.filter(audit_id=scored_audit))
    client.force_login(cast["charlie"])
    assert client.get(f"/audits/{scored_audit}/delete/").status_code == 404
    assert client.post(f"/audits/{scored_audit}/delete/").status_code == 404
    client.force_login(cast["bob"])
    assert 'id="delete-audit"' not in client.get(f"/audits/{scored_audit}/").content.decode()
    assert client.post(f"/audits/{scored_audit}/delete/").status_code == 403
    client.force_login(cast["alice"])
    assert 'id="delete-audit"' in client.get(f"/audits/{scored_audit}/").content.decode()
    confirm = client.get(f"/audits/{scored_audit}/delete/").content.decode()
    assert 'id="confirm-delete"' in confirm and "2 texts" in confirm
    assert not Check.objects.filter(audit_id=scored_audit, deleted_at__isnull=False).exists()
    response = client.post(f"/audits/{scored_audit}/delete/")
    assert response.status_code == 302 and response["Location"] == "/audits/"
    assert client.get(f"/audits/{scored_audit}/").status_code == 404
    assert scored_audit not in client.get("/audits/").content.decode()
    for item in items:
        assert client.get(f"/checks/{item.id}/").status_code == 404
        assert client.get(f"/checks/{item.id}/report/").status_code == 404
        _assert_purged(item, item.text)


def test_purged_audit_items_keep_their_verdicts_in_the_export_without_text(
    api_for, cast, scored_audit, wm_text
):
    Check.objects.filter(audit_id=scored_audit).update(
        created_at=timezone.now() - timedelta(days=31)
    )
    call_command("checks_purge")
    export = api_for("alice").get(f"/api/v1/audits/{scored_audit}/export.json")
    body = b"".join(export.streaming_content).decode()
    assert '"is_watermarked": true' in body and wm_text[:40] not in body
    assert not Check.objects.filter(audit_id=scored_audit).exclude(text="").exists()


def _aged(model, row, days: float) -> None:
    model.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(days=days))


def _turn(conversation: Conversation, prompt: str, reply: str, days_old: float) -> None:
    for role, content in (("user", prompt), ("assistant", reply)):
        _aged(
            Message,
            Message.objects.create(conversation=conversation, role=role, content=content),
            days_old,
        )


def test_the_purge_deletes_playground_messages_past_the_period_and_their_title(client, cast):
    alice = cast["alice"]
    alice.user_permissions.add(Permission.objects.get(codename="use_playground"))
    old = Conversation.objects.create(team=cast["acme"], user=alice, title="my secret draft")
    _aged(Conversation, old, 40)
    _turn(old, "my secret draft, please rewrite", "a rewritten secret draft", days_old=40)
    ongoing = Conversation.objects.create(team=cast["acme"], user=alice, title="an old prompt")
    _aged(Conversation, ongoing, 35)
    _turn(ongoing, "an old prompt", "an old reply", days_old=35)
    _turn(ongoing, "a fresh prompt", "a fresh reply", days_old=1)
    call_command("checks_purge")
    assert not Conversation.objects.filter(id=old.id).exists()
    ongoing.refresh_from_db()
    assert ongoing.title == ""
    kept = list(Message.objects.filter(conversation=ongoing).values_list("content", flat=True))
    assert kept == ["a fresh prompt", "a fresh reply"]
    client.force_login(alice)
    listing = client.get("/playground/").content.decode()
    assert "secret draft" not in listing and "an old prompt" not in listing
    page = client.get(f"/playground/c/{ongoing.id}/").content.decode()
    assert "a fresh reply" in page and "an old reply" not in page


def test_a_teams_shorter_period_applies_to_its_playground_only(cast, settings):
    settings.PROVENANCE_RETENTION_DAYS = 30
    cast["acme"].retention_days = 7
    cast["acme"].save()
    acme = Conversation.objects.create(team=cast["acme"], user=cast["alice"])
    other = Conversation.objects.create(team=cast["other"], user=cast["charlie"])
    _turn(acme, "acme prompt", "acme reply", days_old=8)
    _turn(other, "other prompt", "other reply", days_old=8)
    call_command("checks_purge")
    assert not Message.objects.filter(conversation__team=cast["acme"]).exists()
    assert Message.objects.filter(conversation=other).count() == 2


def test_the_purge_deletes_streams_opened_before_the_period(api_for, cast, alice_key):
    alice = api_for("alice")
    old = alice.post("/api/v1/streams", {}, format="json").json()["id"]
    fresh = alice.post("/api/v1/streams", {}, format="json").json()["id"]
    for stream_id in (old, fresh):
        response = alice.post(
            f"/api/v1/streams/{stream_id}/append", {"text": "a private essay "}, format="json"
        )
        assert response.status_code == 200
    _aged(Stream, Stream.objects.get(id=old), 31)
    logged = list(DetectionLog.objects.filter(kind="stream").values_list("id", "text_sha256"))
    assert len(logged) == 2 and all(digest for _, digest in logged)
    call_command("checks_purge")
    # The detection log keeps every append (by hash); only the stream's row goes.
    after = DetectionLog.objects.filter(kind="stream").values_list("id", "text_sha256")
    assert sorted(after) == sorted(logged)
    assert list(Stream.objects.values_list("id", flat=True)) == [Stream.objects.get(id=fresh).id]
    more = {"text": "more"}
    assert alice.post(f"/api/v1/streams/{old}/append", more, format="json").status_code == 404
    assert alice.post(f"/api/v1/streams/{fresh}/append", more, format="json").status_code == 200


def test_deleting_one_audit_item_leaves_it_out_of_the_audits_pages_and_exports(
    api_for, client, cast, scored_audit, wm_text
):
    alice = api_for("alice")
    item = Check.objects.get(audit_id=scored_audit, client_id="essay-1")
    assert alice.delete(f"/api/v1/checks/{item.id}").status_code == 204
    items = alice.get(f"/api/v1/audits/{scored_audit}/items").json()
    assert [row["client_id"] for row in items["results"]] == ["essay-2"]
    for fmt in ("csv", "json"):
        export = alice.get(f"/api/v1/audits/{scored_audit}/export.{fmt}")
        body = b"".join(export.streaming_content).decode()
        assert "essay-2" in body and "essay-1" not in body and wm_text[:40] not in body
    client.force_login(cast["alice"])
    page = client.get(f"/audits/{scored_audit}/").content.decode()
    assert "essay-2" in page and "essay-1" not in page
    _assert_purged(item, wm_text)


@pytest.mark.django_db(transaction=True)  # the sweepers close the connection between passes
def test_both_sweepers_purge_on_every_pass(cast, alice_key, wm_text):
    from provenance.runner.embedded import _Sweeper

    by_compose = _scored(cast["alice"], wm_text, days_old=31)
    call_command("checks_sweep")  # compose's sweeper service, one pass
    _assert_purged(by_compose, wm_text)
    by_make_run = _scored(cast["alice"], wm_text, days_old=31)
    sweeper = _Sweeper()
    sweeper.last -= sweeper.every  # due now
    sweeper.tick()
    _assert_purged(by_make_run, wm_text)
