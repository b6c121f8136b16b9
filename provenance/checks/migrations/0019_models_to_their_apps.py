"""The models of other concerns leave the checks app for the apps that own them: Audit
(audits), Worker (heartbeats), DetectionLog and QuotaUsage (usage). Their tables keep their
names and rows: Django's state moves, the database does not (SQLite and PostgreSQL alike).
Their content types move with them, so the permissions and admin history that name them
stay attached."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = {"audit": "audits", "worker": "heartbeats", "detectionlog": "usage", "quotausage": "usage"}


def content_types_follow(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model, app_label in MOVED.items():
        if not content_type.objects.filter(app_label=app_label, model=model).exists():
            content_type.objects.filter(app_label="checks", model=model).update(app_label=app_label)


def content_types_return(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model, app_label in MOVED.items():
        if not content_type.objects.filter(app_label="checks", model=model).exists():
            content_type.objects.filter(app_label=app_label, model=model).update(app_label="checks")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("audits", "0001_initial"),
        ("checks", "0018_check_best_index_correction"),
        ("heartbeats", "0001_initial"),
        ("usage", "0001_initial"),
        ("webhooks", "0002_delivery_audit_in_audits"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="upload",
                    name="audit",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="uploads",
                        to="audits.audit",
                    ),
                ),
                migrations.AlterField(
                    model_name="check",
                    name="audit",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="checks",
                        to="audits.audit",
                    ),
                ),
                migrations.AlterField(
                    model_name="check",
                    name="worker",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="heartbeats.worker",
                    ),
                ),
                migrations.DeleteModel(name="DetectionLog"),
                migrations.DeleteModel(name="QuotaUsage"),
                migrations.DeleteModel(name="Audit"),
                migrations.DeleteModel(name="Worker"),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
