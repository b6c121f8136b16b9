"""The table checks_audit stays where the checks app created it, rows and all: this app takes over
the model (Audit) in Django's state only, on SQLite and PostgreSQL alike.
"""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("accounts", "0007_identity_confirmation"),
        ("checks", "0018_check_best_index_correction"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Audit",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("idempotency_key", models.CharField(blank=True, max_length=200)),
                        ("request_hash", models.CharField(max_length=64)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "pending"),
                                    ("running", "running"),
                                    ("done", "done"),
                                    ("failed", "failed"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("num_texts", models.PositiveIntegerField()),
                        (
                            "key_ids",
                            models.JSONField(
                                help_text="Resolved hypotheses: ids of the keys tested."
                            ),
                        ),
                        ("threshold", models.FloatField()),
                        (
                            "callback_url",
                            models.URLField(blank=True, db_default="", default="", max_length=500),
                        ),
                        (
                            "failure_code",
                            models.CharField(blank=True, db_default="", default="", max_length=40),
                        ),
                        ("failure_reason", models.TextField(blank=True, db_default="", default="")),
                        ("refusals", models.JSONField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("deleted_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "submitted_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="audits",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="audits",
                                to="accounts.team",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "checks_audit",
                        "ordering": ["-created_at", "-id"],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("idempotency_key", ""), _negated=True),
                                fields=("team", "idempotency_key"),
                                name="unique_audit_idempotency_key_per_team",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
