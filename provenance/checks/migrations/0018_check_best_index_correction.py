"""The decision's best hypothesis and correction, stored: checks scored before keep theirs
(the hypothesis of the stored best key, and Holm, the only correction the product applied)."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def fill(apps, schema_editor):
    Check = apps.get_model("checks", "Check")
    Hypothesis = apps.get_model("checks", "Hypothesis")
    best = Hypothesis.objects.filter(check_run=OuterRef("pk"), key=OuterRef("best_key"))
    Check.objects.filter(best_key__isnull=False).update(
        best_index=Subquery(best.order_by("index").values("index")[:1])
    )
    Check.objects.filter(num_hypotheses__isnull=False).update(correction="holm")


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0017_check_surface_metrics_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="check",
            name="best_index",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="check",
            name="correction",
            field=models.CharField(blank=True, db_default="", default="", max_length=20),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
