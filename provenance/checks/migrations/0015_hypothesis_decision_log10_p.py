from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0014_hypothesis_weighted_suspected"),
    ]

    operations = [
        migrations.AddField(
            model_name="hypothesis",
            name="decision_log10_p",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
