from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("streams", "0002_retention_index")]

    operations = [
        migrations.AddField(
            model_name="stream",
            name="token_ids",
            field=models.BinaryField(default=b"", editable=False),
        ),
        migrations.AddField(
            model_name="stream",
            name="decision",
            field=models.JSONField(blank=True, editable=False, null=True),
        ),
    ]
