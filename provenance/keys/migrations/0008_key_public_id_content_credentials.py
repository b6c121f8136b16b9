# A key's public identifier (the soft binding value its replies' manifests name) and whether
# its replies carry Content Credentials. Existing keys get a random identifier each.

from django.db import migrations, models

import provenance.keys.models


def fill_public_ids(apps, schema_editor):
    WatermarkKey = apps.get_model("keys", "WatermarkKey")
    for key in WatermarkKey.objects.filter(public_id__isnull=True):
        key.public_id = provenance.keys.models.new_public_id()
        key.save(update_fields=["public_id"])


class Migration(migrations.Migration):
    dependencies = [("keys", "0007_key_published")]

    operations = [
        migrations.AddField(
            model_name="watermarkkey",
            name="public_id",
            field=models.CharField(max_length=40, null=True, editable=False),
        ),
        migrations.RunPython(fill_public_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="watermarkkey",
            name="public_id",
            field=models.CharField(
                default=provenance.keys.models.new_public_id,
                editable=False,
                max_length=40,
                unique=True,
            ),
        ),
        migrations.AddField(
            model_name="watermarkkey",
            name="content_credentials",
            field=models.BooleanField(
                default=False,
                help_text="The generator signs this key's replies with a C2PA manifest.",
            ),
        ),
    ]
