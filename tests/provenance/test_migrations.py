"""The models that left the checks app (Audit, Worker, DetectionLog, QuotaUsage) keep their
tables: a database populated before the move migrates forward with every row in place, its
relations intact and its content types moved with the models."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from provenance.audits.models import Audit
from provenance.checks.models import Check
from provenance.heartbeats.models import Worker
from provenance.usage.models import DetectionLog, QuotaUsage
from provenance.webhooks.models import WebhookDelivery

# The state before the move: the checks app held the four models.
BEFORE = [
    ("checks", "0018_check_best_index_correction"),
    ("webhooks", "0001_initial"),
    ("audits", None),
    ("heartbeats", None),
    ("usage", None),
]
MOVED = {"audit": "audits", "worker": "heartbeats", "detectionlog": "usage", "quotausage": "usage"}


def _migrate(targets: list[tuple[str, str | None]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor


@pytest.mark.django_db(transaction=True)
def test_a_database_populated_before_the_move_keeps_its_rows():
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    moved_types = {
        model: ContentType.objects.get(app_label=app, model=model).id
        for model, app in MOVED.items()
    }
    try:
        loader = _migrate(BEFORE).loader
        old = loader.project_state(list(loader.applied_migrations)).apps
        with pytest.raises(LookupError):
            old.get_model("audits", "Audit")
        for model, type_id in moved_types.items():  # the content types went back with them
            assert ContentType.objects.get(id=type_id).app_label == "checks", model
        now = timezone.now()
        team = old.get_model("accounts", "Team").objects.create(name="before the move")
        user = old.get_model("auth", "User").objects.create(username="mover")
        audit = old.get_model("checks", "Audit").objects.create(
            team=team,
            submitted_by=user,
            request_hash="0" * 64,
            num_texts=1,
            key_ids=[],
            threshold=0.01,
        )
        worker = old.get_model("checks", "Worker").objects.create(
            nodename="celery@before", pid=4242, started_at=now, beat_at=now
        )
        check = old.get_model("checks", "Check").objects.create(
            team=team,
            audit=audit,
            text="a text",
            key_ids=[],
            threshold=0.01,
            status="running",
            worker=worker,
        )
        old.get_model("checks", "DetectionLog").objects.create(
            user=user,
            username="mover",
            team=team,
            kind="audit",
            check_run=check,
            audit=audit,
            num_texts=1,
            key_ids=[],
            key_names=[],
        )
        old.get_model("checks", "QuotaUsage").objects.create(user=user, day=now.date(), used=7)
        old.get_model("webhooks", "WebhookDelivery").objects.create(
            team=team,
            audit=audit,
            event="audit.finished",
            url="https://hooks.example/x",
            payload={},
        )
    finally:
        _migrate(leaves)

    moved = Audit.objects.get(id=audit.id)
    assert (moved.team_id, moved.submitted_by_id, moved.num_texts) == (team.id, user.id, 1)
    assert list(moved.checks.values_list("id", flat=True)) == [check.id]
    assert Check.objects.get(id=check.id).worker == Worker.objects.get(id=worker.id)
    assert Worker.objects.get(id=worker.id).pid == 4242
    log = DetectionLog.objects.get(audit_id=audit.id)
    assert (log.check_run_id, log.user_id, log.kind) == (check.id, user.id, "audit")
    assert QuotaUsage.objects.get(user_id=user.id, day=now.date()).used == 7
    assert WebhookDelivery.objects.get(audit=moved).url == "https://hooks.example/x"
    for model, app in MOVED.items():  # the same content type rows, under the new apps
        assert ContentType.objects.get(id=moved_types[model]).app_label == app
    for model_class in (Audit, Worker, DetectionLog, QuotaUsage):
        found = ContentType.objects.get_for_model(model_class)
        assert found.id == moved_types[model_class._meta.model_name]
