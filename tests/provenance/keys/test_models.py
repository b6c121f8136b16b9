"""Registry rows: names and states in words, never a key value; one key name per team; the
calibration's per-temperature figure."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from provenance.keys.models import GenreRate, KeyCalibration, Tokenizer, WatermarkKey
from provenance.keys.services import key_create
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def test_a_key_names_itself_without_its_value(alice_key):
    assert str(alice_key) == f"acme-main ({alice_key.algorithm}, active)"
    assert repr(alice_key) == f"<WatermarkKey id={alice_key.pk} name='acme-main'>"
    for text in (str(alice_key), repr(alice_key)):
        assert str(KEY_VALUE) not in text and f"{KEY_VALUE:x}" not in text


def test_a_key_name_is_unique_within_a_team_only(cast, tokenizer_row, alice_key):
    key_create(name="acme-main", team=cast["other"], tokenizer=tokenizer_row)  # another team
    with pytest.raises(IntegrityError), transaction.atomic():
        WatermarkKey.objects.create(
            name="acme-main", team=cast["acme"], tokenizer=tokenizer_row, encrypted_value=b"x"
        )


def test_alpha_and_context_width_are_validated(alice_key):
    alice_key.alpha, alice_key.context_width = 1.5, 0
    with pytest.raises(ValidationError) as info:
        alice_key.full_clean()
    assert {"alpha", "context_width"} <= set(info.value.message_dict)


def test_the_default_tokenizer_loads_as_default_and_an_upload_from_the_data_dir(tokenizer_row):
    assert tokenizer_row.source == "default" and str(tokenizer_row) == tokenizer_row.name
    upload = Tokenizer(name="u", source_kind=Tokenizer.Source.UPLOAD, source_path="uploads/ab")
    assert upload.source.endswith("/tokenizers/uploads/ab") and not upload.has_model
    assert Tokenizer(name="m", model_path="embedded").has_model


def test_a_calibration_reads_its_tokens_needed_per_temperature(alice_key):
    run = KeyCalibration.objects.create(
        key=alice_key,
        threshold=0.01,
        texts_per_genre=4,
        chunk_tokens=200,
        power={"1.0": {"tokens_needed": 90}, "0.7": {"tokens_needed": None}},
    )
    assert str(run) == "calibration of acme-main (pending)"
    assert run.tokens_needed(1.0) == 90 and run.tokens_needed(0.7) is None
    assert run.tokens_needed(0.5) is None
    rate = GenreRate.objects.create(
        calibration=run,
        genre="prose",
        corpus="c",
        texts=10,
        flagged=1,
        rate=0.1,
        ci_low=0.0,
        ci_high=0.4,
    )
    assert str(rate) == "prose: 1/10"
    with pytest.raises(IntegrityError), transaction.atomic():
        GenreRate.objects.create(
            calibration=run,
            genre="prose",
            corpus="c",
            texts=1,
            flagged=0,
            rate=0.0,
            ci_low=0.0,
            ci_high=1.0,
        )
