"""The tables checks_detectionlog and checks_quotausage stay where the checks app created
them, rows and all: this app takes over the models (DetectionLog, QuotaUsage) in Django's
state only, on SQLite and PostgreSQL alike.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("accounts", "0007_identity_confirmation"),
        ("audits", "0001_initial"),
        ("checks", "0018_check_best_index_correction"),
        ("streams", "0003_stream_decision"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="DetectionLog",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("username", models.CharField(max_length=150)),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("check", "check"),
                                    ("audit", "audit"),
                                    ("detect", "detect (synchronous)"),
                                    ("stream", "stream append"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("num_texts", models.PositiveIntegerField()),
                        ("text_sha256", models.CharField(blank=True, max_length=64)),
                        ("key_ids", models.JSONField()),
                        ("key_names", models.JSONField()),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        (
                            "audit",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="audits.audit",
                            ),
                        ),
                        (
                            "check_run",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="checks.check",
                            ),
                        ),
                        (
                            "stream",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="streams.stream",
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="accounts.team",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "checks_detectionlog",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [
                            models.Index(
                                fields=["user", "created_at"], name="checks_dete_user_id_a6d2fa_idx"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="QuotaUsage",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("day", models.DateField()),
                        ("used", models.PositiveIntegerField(default=0)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "checks_quotausage",
                        "constraints": [
                            models.UniqueConstraint(fields=("user", "day"), name="quota_user_day")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
