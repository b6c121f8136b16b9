"""The table checks_worker stays where the checks app created it, rows and all: this app takes over
the model (Worker) in Django's state only, on SQLite and PostgreSQL alike.
"""

import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("checks", "0018_check_best_index_correction"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Worker",
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
                        ("nodename", models.CharField(db_index=True, max_length=200)),
                        ("pid", models.PositiveIntegerField()),
                        ("started_at", models.DateTimeField()),
                        ("beat_at", models.DateTimeField(db_index=True)),
                        ("dead_at", models.DateTimeField(blank=True, db_index=True, null=True)),
                    ],
                    options={
                        "db_table": "checks_worker",
                        "ordering": ["-started_at"],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
