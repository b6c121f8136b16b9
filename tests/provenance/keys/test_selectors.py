"""Reads of the registry: which keys a team may test, which answers may be exact, who may
calibrate, and the one place key values are decrypted."""

from __future__ import annotations

import pytest

from provenance.accounts.models import Membership
from provenance.keys.selectors import (
    KeySelectionError,
    exact_for,
    key_config,
    key_family,
    keys_for_check,
    keys_visible_to,
    may_calibrate,
    owned_key_ids,
)
from provenance.keys.services import key_create, key_retire
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def test_key_config_repr_never_shows_the_value(alice_key):
    config = key_config(alice_key)
    assert config.key == KEY_VALUE
    assert str(KEY_VALUE) not in repr(config) and f"{KEY_VALUE:x}" not in repr(config)


def test_a_check_tests_own_and_shared_keys_but_not_other_teams(cast, tokenizer_row, alice_key):
    shared, _ = key_create(name="s", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    private, _ = key_create(name="p", team=cast["other"], tokenizer=tokenizer_row)
    ids = {key.id for key in keys_for_check(cast["acme"])}
    assert ids == {alice_key.id, shared.id}
    assert {key.id for key in keys_for_check(cast["other"])} == {shared.id, private.id}


def test_retired_keys_are_tested_by_default_within_the_window_and_may_be_named(
    alice_key, cast, settings
):
    key_retire(key=alice_key)
    assert [key.id for key in keys_for_check(cast["acme"])] == [alice_key.id]
    assert [key.id for key in keys_for_check(cast["acme"], [alice_key.id])] == [alice_key.id]
    settings.PROVENANCE_RETIRED_KEY_WINDOW_DAYS = 0
    with pytest.raises(KeySelectionError, match="no watermark keys"):
        keys_for_check(cast["acme"])
    assert key_family(cast["acme"]).left_out == {alice_key.id: "retired_past_window"}


def test_the_family_names_each_keys_reason(cast, tokenizer_row, alice_key):
    theirs, _ = key_create(name="s", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    family = key_family(cast["acme"])
    assert family.reasons == {alice_key.id: "own_active", theirs.id: "shared_active"}
    assert family.summary()["hypotheses"] == 2 and family.summary()["shared_active"] == 1
    assert key_family(cast["other"]).reasons == {theirs.id: "own_active"}


def test_naming_another_teams_private_key_reads_as_unknown(cast, tokenizer_row):
    private, _ = key_create(name="p", team=cast["other"], tokenizer=tokenizer_row)
    with pytest.raises(KeySelectionError, match="unknown"):
        keys_for_check(cast["acme"], [private.id])


def test_no_team_sees_no_key_and_a_check_without_keys_is_refused(alice_key):
    assert not keys_visible_to(None).exists()
    with pytest.raises(KeySelectionError, match="no watermark keys"):
        keys_for_check(None)


def test_named_keys_come_in_the_order_named_once_each(cast, tokenizer_row, alice_key):
    second, _ = key_create(name="second", team=cast["acme"], tokenizer=tokenizer_row)
    named = keys_for_check(cast["acme"], [second.id, alice_key.id, str(second.id)])
    assert [key.id for key in named] == [second.id, alice_key.id]


def test_exact_answers_need_the_auditor_tier_and_ownership_of_every_key(
    cast, tokenizer_row, alice_key
):
    shared, _ = key_create(name="s", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    assert owned_key_ids(cast["alice"]) == {str(alice_key.id)}
    assert exact_for(cast["alice"], [alice_key.id]) and exact_for(cast["alice"], [])
    assert not exact_for(cast["alice"], [alice_key.id, shared.id])
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    assert owned_key_ids(cast["alice"]) is None and not exact_for(cast["alice"], [alice_key.id])


def test_only_a_team_admin_or_a_registry_administrator_may_calibrate(cast, alice_key):
    assert not may_calibrate(cast["alice"], alice_key)
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    assert may_calibrate(cast["alice"], alice_key)
    Membership.objects.filter(user=cast["charlie"]).update(is_admin=True)
    assert not may_calibrate(cast["charlie"], alice_key)  # an admin of another team


def test_the_key_config_follows_the_registry_row(cast, tokenizer_row):
    key, value = key_create(
        name="wide", team=cast["acme"], tokenizer=tokenizer_row, context_width=6, deduplicate=False
    )
    config = key_config(key)
    assert (config.key, config.context_width, config.name) == (value, 6, "wide")
    assert config.deduplicate_contexts == "none"


def finished_calibration(key, *, power: bool = True, assisted: bool = False):
    """A finished calibration as the task stores it, with figures chosen by hand: prose
    flagged beyond chance, code and templated text within the threshold, and (``power``)
    a curve per sampling setting, T=1 reaching 80% at 100 tokens, T=0.7 not within 150."""
    from django.utils import timezone

    from detector.evidence.calibration import clopper_pearson
    from provenance.keys.models import GenreRate, KeyCalibration

    run = KeyCalibration.objects.create(
        key=key,
        status=KeyCalibration.Status.DONE,
        threshold=0.01,
        texts_per_genre=300,
        chunk_tokens=250,
        power_prompts=8 if power else 0,
        power_tokens=150 if power else 0,
        finished_at=timezone.now(),
    )
    for genre, flagged in (("prose", 12), ("code", 2), ("templated", 0)):
        ci = clopper_pearson(flagged, 300)
        low, high = ci.low, ci.high
        GenreRate.objects.create(
            calibration=run,
            genre=genre,
            corpus=f"{genre}: 300 chunks of 250",
            texts=300,
            flagged=flagged,
            rate=flagged / 300,
            ci_low=low,
            ci_high=high,
            above_threshold=low > 0.01,
        )
    if power:
        run.power = {
            label: {
                "temperature": float(label),
                "top_p": top_p,
                "points": [
                    {"tokens": n, "texts": 8, "detected": d, "scored": n - 5}
                    for n, d in zip((25, 50, 100, 150), detected, strict=True)
                ],
                "tokens_needed": needed,
                "scored_tokens_needed": None if needed is None else needed - 5,
            }
            for label, top_p, detected, needed in (
                ("1.0", 1.0, (1, 4, 7, 8), 100),
                ("0.7", 0.9, (0, 1, 3, 5), None),
            )
        }
    if assisted:
        ci = clopper_pearson(1, 40)
        rate = {"texts": 40, "flagged": 1, "rate": 0.025, "ci_low": ci.low, "ci_high": ci.high}
        run.assisted = {"genres": {"prose": {**rate, "above_threshold": False}}, "note": "on"}
    run.save()
    return run


def test_calibration_figures_name_every_rate_and_the_power_curve(alice_key):
    from provenance.keys.selectors import calibration_figures

    assert calibration_figures(None) is None
    run = finished_calibration(alice_key, assisted=True)
    figures = calibration_figures(run)
    assert figures["threshold"] == 0.01 and figures["measured_at"] == run.finished_at.isoformat()
    prose, code, templated = figures["rates"]
    assert prose["genre"] == "prose" and prose["flagged"] == 12 and prose["above_threshold"]
    assert prose["ci_low"] < prose["rate"] == 0.04 < prose["ci_high"]
    assert not code["above_threshold"] and templated["rate"] == 0.0
    assert figures["assisted_rates"][0]["genre"] == "prose"
    assert figures["assisted_rates"][0]["texts"] == 40 and figures["assisted_note"] == "on"
    hot, cool = figures["power"]
    assert hot["setting"] == "1.0" and hot["tokens_needed"] == 100 and hot["top_p"] == 1.0
    assert [p["power"] for p in hot["points"]] == [0.125, 0.5, 0.875, 1.0]
    assert cool["tokens_needed"] is None and cool["temperature"] == 0.7


def test_a_calibration_without_power_has_no_curve(alice_key):
    from provenance.keys.selectors import calibration_figures

    figures = calibration_figures(finished_calibration(alice_key, power=False))
    assert figures["power"] == [] and figures["assisted_rates"] == []
