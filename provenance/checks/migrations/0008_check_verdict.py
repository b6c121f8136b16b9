from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("checks", "0007_heatmap_compact"),
    ]

    operations = [
        migrations.AddField(
            model_name="check",
            name="verdict",
            field=models.CharField(
                blank=True,
                choices=[
                    ("watermarked", "watermarked"),
                    ("not_watermarked", "not watermarked"),
                    ("inconclusive", "inconclusive"),
                ],
                db_default="",
                default="",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="check",
            name="verdict_reason",
            field=models.TextField(blank=True, db_default="", default=""),
        ),
        migrations.AddField(
            model_name="check",
            name="verdict_tokens_needed",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
