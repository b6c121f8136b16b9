"""Writes of the playground: conversations, the sampling settings asked for, the meter and
the check of a reply."""

from __future__ import annotations

import pytest

from provenance.accounts.services import user_create
from provenance.errors import ProblemError
from provenance.keys.services import key_create
from provenance.playground import services
from provenance.playground.models import Conversation, Message
from tests.provenance.conftest import KEY_VALUE
from tests.provenance.playground.replies import stored_reply
from tests.provenance.watermark import watermarked_ids

pytestmark = pytest.mark.django_db


def test_the_meter_reads_strong_evidence_on_watermarked_tokens(alice_key):
    meter = services.Meter(alice_key)
    ids = [int(i) for i in watermarked_ids(KEY_VALUE, num_tokens=60, seed=3)]
    strong, early = meter.read(ids), meter.read(ids[:5])
    assert strong["log10_p"] < -5 and strong["watermarked"]
    assert early["log10_p"] > strong["log10_p"]
    assert "Meter" in repr(meter) and str(KEY_VALUE) not in repr(meter)


def test_the_meter_finds_nothing_under_another_key(cast, tokenizer_row):
    # a fixed other key: a random one would fall under the 1% threshold in 1% of the runs
    other, _ = key_create(
        name="k2", team=cast["acme"], tokenizer=tokenizer_row, value=KEY_VALUE ^ 0x5A5A5A5A
    )
    ids = [int(i) for i in watermarked_ids(KEY_VALUE, num_tokens=60, seed=3)]
    assert services.Meter(other).read(ids)["log10_p"] > -2


def test_a_conversation_belongs_to_the_users_team(cast):
    conversation = services.conversation_create(user=cast["bob"])
    assert (conversation.team, conversation.user) == (cast["acme"], cast["bob"])
    with pytest.raises(ProblemError, match="no team") as info:
        services.conversation_create(user=user_create(username="loner", password="p"))
    assert info.value.status_code == 403


def test_sampling_settings_are_parsed_within_their_bounds(settings):
    limit = settings.PROVENANCE_PLAYGROUND["MAX_TOKENS"]
    assert services.Sampling.parse("0.7", "0.9", "40") == services.Sampling(0.7, 0.9, 40)
    assert services.Sampling.parse(0, 1, limit).max_tokens == limit
    for bad, message in [
        (("3", "1", "10"), "temperature must lie in"),
        (("x", "1", "10"), "temperature must be a number"),
        (("1", "0", "10"), "top-p must be greater than 0"),
        (("1", "nan", "10"), "top-p must lie in"),
        (("1", "1", str(limit + 1)), "max tokens must lie in"),
        (("1", "1", "2.5"), "max tokens must be a whole number"),
    ]:
        with pytest.raises(ProblemError, match=message):
            services.Sampling.parse(*bad)


def test_a_reply_is_checked_as_stored_or_as_edited(cast, alice_key):
    conversation = Conversation.objects.create(team=cast["acme"], user=cast["bob"])
    reply = stored_reply(conversation, alice_key, "The stored reply.")
    assert services.reply_check(user=cast["bob"], message=reply).text == "The stored reply."
    edited = services.reply_check(user=cast["bob"], message=reply, text="An edited copy.")
    assert edited.text == "An edited copy."
    Message.objects.filter(pk=reply.pk).update(status="streaming")
    reply.refresh_from_db()
    with pytest.raises(ProblemError, match="still streaming"):
        services.reply_check(user=cast["bob"], message=reply)


def test_the_playground_meter_reads_the_e_process_token_by_token(alice_key):
    meter = services.Meter(alice_key)
    ids = [int(i) for i in watermarked_ids(KEY_VALUE, num_tokens=80, seed=6)]
    readings = [meter.read(ids[: i + 1]) for i in range(len(ids))]
    flagged = [r["watermarked"] for r in readings]
    assert flagged[-1]
    assert all(flagged[flagged.index(True) :])  # the anytime verdict stays once reached
    anytime = [r["log10_p"] for r in readings]
    assert all(b <= a for a, b in zip(anytime, anytime[1:], strict=False))  # running max of E


def test_the_meter_rounds_p_for_the_basic_tier(alice_key):
    meter = services.Meter(alice_key, auditor=False)
    ids = [int(i) for i in watermarked_ids(KEY_VALUE, num_tokens=40, seed=7)]
    reading = meter.read(ids)["log10_p"]
    exact = services.Meter(alice_key).read(ids)["log10_p"]
    assert reading == int(reading) and reading <= exact < reading + 1


def _streaming_reply(cast, alice_key) -> Message:
    conversation = services.conversation_create(user=cast["alice"])
    return services.reply_start(
        user=cast["alice"],
        conversation=conversation,
        content="Hello there.",
        key_id=str(alice_key.id),
        watermark=True,
        sampling=services.Sampling(temperature=1.0, top_p=1.0, max_tokens=8),
    )


def test_a_failed_reply_is_stored_before_the_page_hears_of_it(cast, alice_key, monkeypatch):
    from provenance.playground.client import GeneratorError

    def down(config, request):
        raise GeneratorError("the generator is not reachable", "down")
        yield  # a generator, as the real client is

    monkeypatch.setattr(services, "stream_chat", down)
    message = _streaming_reply(cast, alice_key)
    for event in services.reply_stream(message):
        if event["type"] == "error":
            # A page that reloads on this event reads the reply as failed, not streaming.
            message.refresh_from_db()
            assert message.status == Message.Status.FAILED
            assert message.error == "the generator is not reachable"


def test_a_client_gone_after_the_last_event_leaves_the_reply_done(cast, alice_key, monkeypatch):
    from provenance.playground.client import Chunk

    def replies(config, request):
        yield Chunk(text=" Hi", token_ids=(1, 2), finish_reason="stop")

    monkeypatch.setattr(services, "stream_chat", replies)
    message = _streaming_reply(cast, alice_key)
    events = services.reply_stream(message)
    while next(events)["type"] != "done":
        pass
    message.refresh_from_db()
    assert message.status == Message.Status.DONE and message.content == " Hi"
    events.close()  # the client hangs up before the stream ends
    message.refresh_from_db()
    assert message.status == Message.Status.DONE


def test_a_client_gone_mid_reply_stops_it_with_the_partial_text(cast, alice_key, monkeypatch):
    from provenance.playground.client import Chunk

    def replies(config, request):
        yield Chunk(text=" Hi", token_ids=(1, 2))
        yield Chunk(text=" there", token_ids=(3,), finish_reason="stop")

    monkeypatch.setattr(services, "stream_chat", replies)
    message = _streaming_reply(cast, alice_key)
    events = services.reply_stream(message)
    while next(events)["type"] != "token":
        pass
    events.close()
    message.refresh_from_db()
    assert message.status == Message.Status.STOPPED and message.content == " Hi"
