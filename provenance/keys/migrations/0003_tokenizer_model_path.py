from django.db import migrations, models


def embedded_model(apps, schema_editor):
    # The embedded tokenizer's model is the converted embedded SmolLM2.
    Tokenizer = apps.get_model("keys", "Tokenizer")
    Tokenizer.objects.filter(source_kind="default").update(model_path="embedded")


class Migration(migrations.Migration):
    dependencies = [("keys", "0002_tokenizer_builtin_upload")]

    operations = [
        migrations.AddField(
            model_name="tokenizer",
            name="model_path",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text=(
                    "A local Hugging Face model directory of this tokenizer's model (config.json "
                    "and weights): checks then also run the model-assisted test on the workers. "
                    "Empty: none. “embedded”: the converted embedded SmolLM2."
                ),
                max_length=500,
            ),
        ),
        migrations.RunPython(embedded_model, migrations.RunPython.noop),
    ]
