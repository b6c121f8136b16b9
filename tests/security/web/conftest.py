"""The web product's fixtures (tests/provenance/conftest.py: the cast, a registered key, the
session's KEK and database, a real Redis and Celery worker), for the attacks on the web
service."""

from tests.provenance.conftest import (  # noqa: F401  (fixtures, found by name)
    _fresh_throttle_history,
    alice_key,
    api_for,
    cast,
    celery_worker,
    django_db_modify_db_settings,
    human_text,
    redis_server,
    tokenizer_row,
    wm_text,
)
