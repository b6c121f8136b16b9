"""Publishing keys, partners, and the public check's answer (cache, scrubbing guard)."""

from __future__ import annotations

import pytest

from detector.decision import rule
from detector.text.tokenizers import load_tokenizer
from provenance.errors import Conflict, ProblemError
from provenance.keys.services import key_create, key_publish, key_unpublish
from provenance.public import services
from provenance.public.families import MIN_WORDS, TooShort, VariantLimit, words
from provenance.public.models import ScrubEvent
from provenance.public.selectors import published_keys
from provenance.runner.embedded import DEMO_KEY, DEMO_PUBLIC_NAME, _demo_data
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.public.conftest import PUBLIC_NAME
from tests.provenance.public.test_families import variants
from tests.provenance.watermark import watermarked_text


def test_publishing_keeps_the_name_and_unpublishing_keeps_it_for_later(alice_key):
    key_publish(key=alice_key, public_name="  Acme 2026  ")
    assert list(published_keys()) == [alice_key] and alice_key.public_name == "Acme 2026"
    key_unpublish(key=alice_key)
    assert not published_keys().exists()
    assert key_publish(key=alice_key).public_name == "Acme 2026"


def test_two_published_keys_cannot_share_a_public_name(published, cast, tokenizer_row):
    other, _ = key_create(name="other", team=cast["other"], tokenizer=tokenizer_row, value=7)
    with pytest.raises(Conflict):
        key_publish(key=other, public_name=PUBLIC_NAME)


def test_make_runs_demo_data_publishes_the_demo_key_once(db, tmp_path):
    _demo_data(tmp_path)
    (key,) = published_keys()
    assert (key.name, key.public_name) == (DEMO_KEY, DEMO_PUBLIC_NAME)
    key_unpublish(key=key)
    _demo_data(tmp_path)  # an admin's unpublish stays
    assert not published_keys().exists()


def test_a_partner_key_is_returned_once_and_stored_as_a_hash(db):
    partner, key = services.partner_create(name="Newsroom", per_minute=30)
    assert key.startswith("pvp_") and len(key) > 40
    assert key not in repr(partner.__dict__)
    with pytest.raises(Conflict):
        services.partner_create(name="Newsroom")
    with pytest.raises(ProblemError):
        services.partner_create(name=" ")


def test_the_decision_is_cached_for_the_same_text_and_each_answer_signed_anew(
    published, wm_text, monkeypatch
):
    first = services.answer_for(wm_text)
    monkeypatch.setattr(services, "score_texts", lambda *a, **k: pytest.fail("scored again"))
    second = services.answer_for(wm_text)
    assert second["receipt"] != first["receipt"]  # its own time, its own signature
    assert {k: v for k, v in second.items() if k != "receipt"} == {
        k: v for k, v in first.items() if k != "receipt"
    }


def test_a_new_published_key_means_a_new_answer(published, wm_text, cast, tokenizer_row):
    first = services.answer_for(wm_text)
    other, _ = key_create(name="other", team=cast["other"], tokenizer=tokenizer_row, value=7)
    key_publish(key=other, public_name="Other Model")
    second = services.answer_for(wm_text)
    assert second["receipt"] != first["receipt"] and second["verdict"] == "watermarked"


def test_a_scrubbing_loop_through_the_check_is_stopped_and_logged(published, wm_text, settings):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 5
    answered = stopped = 0
    for variant in dict.fromkeys(variants(wm_text, 40)):
        try:
            services.answer_for(variant)
            answered += 1
        except VariantLimit:
            stopped += 1
    assert answered == 5 and stopped > 0
    assert ScrubEvent.objects.count() == 1


def test_a_text_under_the_public_minimum_is_refused_and_not_counted(published, settings, wm_text):
    settings.PROVENANCE_PUBLIC_MAX_VARIANTS = 1
    for i in range(5):
        with pytest.raises(TooShort) as refused:
            services.answer_for(f"tiny text {i}")
        assert refused.value.status_code == 400 and refused.value.code == "too_short"
    assert services.answer_for(wm_text)["verdict"] == "watermarked"


def _sized(tokens: int, seed: int) -> str:
    """A watermarked text of ``tokens`` tokens and at least the public minimum of words."""
    text = watermarked_text(KEY_VALUE, tokens, seed=seed)
    assert len(words(text)) >= MIN_WORDS
    return text


def test_the_minimum_in_tokens_is_the_decisions_own(published, monkeypatch):
    """A text of enough words is refused as too short exactly when the decision's own
    minimum (``detector.decision.rule.too_short``) calls it too short, whatever that
    minimum is: one public minimum, one error."""
    brief = _sized(14, seed=3)  # 15 tokens, watermarked
    with pytest.raises(TooShort, match="16 tokens"):
        services.answer_for(brief)
    monkeypatch.setattr(rule, "MIN_TOKENS", 8)
    answer = services.answer_for(brief)
    assert (answer["verdict"], answer["model"]) == ("watermarked", PUBLIC_NAME)
    assert answer["tokens_scored"] == len(load_tokenizer("default").encode(brief))
    monkeypatch.setattr(rule, "MIN_TOKENS", 40)
    with pytest.raises(TooShort, match="40 tokens"):
        services.answer_for(_sized(30, seed=6))


def test_the_strength_is_the_decisions_own_band(published, wm_text, monkeypatch):
    """The answer's strength is the band the library puts the corrected p-value in
    (``detector.decision.combined.strength_band``), whatever its bands are."""
    from detector.decision import combined

    assert services.answer_for(wm_text)["strength"] == -31  # p < 1e-30: 160 marked tokens
    monkeypatch.setattr(combined, "STRENGTH_BANDS", (-8,))
    other = watermarked_text(KEY_VALUE, 160, seed=9)  # another text: no cached answer
    assert services.answer_for(other)["strength"] == -9
