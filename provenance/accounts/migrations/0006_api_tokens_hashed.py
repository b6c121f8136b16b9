"""API tokens move from DRF's authtoken (the token in plain text) to django-rest-knox (its
SHA-512 digest): each existing token becomes a knox row under the digest of the same string,
so clients keep sending it, with the configured expiry from now; the plain rows are deleted.
The table of the app no longer installed is read by name, when it exists."""

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone

PLAIN_TABLE = "authtoken_token"


def hash_plain_tokens(apps, schema_editor):
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS

    connection = schema_editor.connection
    if PLAIN_TABLE not in connection.introspection.table_names():
        return
    table = schema_editor.quote_name(PLAIN_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {schema_editor.quote_name('key')}, user_id FROM {table}")
        rows = cursor.fetchall()
    token_model = apps.get_model("knox", "AuthToken")
    expiry = timezone.now() + timedelta(days=settings.PROVENANCE_API_TOKEN_DAYS)
    token_model.objects.bulk_create(
        token_model(
            digest=hash_token(key),
            token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH],
            user_id=user_id,
            expiry=expiry,
        )
        for key, user_id in rows
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_team_basic_tier_default"),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunPython(hash_plain_tokens, migrations.RunPython.noop)]
