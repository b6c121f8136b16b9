"""Chromium chats in the playground of the running product (live server, real worker, the
embedded generator): a streamed watermarked reply is checked and found watermarked; with the
watermark switched off, the reply is not."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from provenance.playground.models import Message
from provenance.runner.redis_server import free_port
from tests.provenance import test_browser

# The browser fixture of that module; the generator's come from this folder's conftest.
browser_page = test_browser.browser_page
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _chat(page, prompt: str, watermark: bool, temperature: str = "1") -> str:
    """Send a prompt; wait until the reply is seen streaming, then complete; returns it."""
    page.fill("#id_content", prompt)
    page.set_checked("#id_watermark", watermark)
    page.fill("#id_temperature", temperature)
    page.fill("#id_max_tokens", "80")
    before = page.locator(".msg.assistant.done").count()
    page.click("#send")
    # Streamed: text and a meter reading appear while the reply is still growing.
    page.wait_for_function(
        "() => { const r = document.querySelector('.msg.assistant.streaming');"
        " return r && r.querySelector('.body').textContent.length > 0"
        " && r.querySelector('.meter').dataset.log10p !== undefined; }",
        timeout=120_000,
    )
    assert page.is_visible("#stop")
    page.wait_for_function(
        f"() => document.querySelectorAll('.msg.assistant.done').length > {before}",
        timeout=120_000,
    )
    # The "done" event arrives before the stream closes; the controls settle when it closes.
    page.wait_for_function(
        "() => document.getElementById('stop').hidden && !document.getElementById('send').disabled",
        timeout=30_000,
    )
    reply = page.locator(".msg.assistant.done").last
    return reply.locator(".body").text_content()


def _check_last_reply(page) -> str:
    page.locator(".msg.assistant.done").last.locator(".check-reply").click()
    page.wait_for_selector("#verdict", timeout=60_000)
    return page.get_attribute("#verdict", "data-verdict")


def _login_to_a_new_conversation(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.click("text=Playground")
    page.click("#new-conversation")
    page.wait_for_selector("#chat-form")


def test_a_generator_that_is_down_shows_a_message_and_a_working_retry(
    live_server, cast, alice_key, settings, browser_page
):
    settings.PROVENANCE_PLAYGROUND = {
        **settings.PROVENANCE_PLAYGROUND,
        "GENERATOR_URL": f"http://127.0.0.1:{free_port()}",
    }
    cast["alice"].user_permissions.add(Permission.objects.get(codename="use_playground"))
    page = browser_page
    _login_to_a_new_conversation(page, live_server.url)
    page.fill("#id_content", "Hello there.")
    page.click("#send")
    page.wait_for_selector("#failure:not([hidden])")
    assert "not reachable" in page.text_content("#failure-text")
    assert "Hello there." in page.text_content("#messages")  # the turn is kept
    page.wait_for_function(
        "() => document.getElementById('stop').hidden && !document.getElementById('send').disabled",
        timeout=30_000,
    )
    page.click("#retry")
    page.wait_for_function("() => document.querySelectorAll('.msg.assistant.failed').length == 2")
    assert Message.objects.filter(role="user").count() == 1
    assert Message.objects.filter(role="assistant", status="failed").count() == 2


def test_a_user_chats_sees_the_reply_stream_and_checks_it(
    celery_worker,
    live_server,
    cast,
    alice_key,
    generator,
    browser_page,
):
    cast["alice"].user_permissions.add(Permission.objects.get(codename="use_playground"))
    page = browser_page
    _login_to_a_new_conversation(page, live_server.url)
    conversation = page.url

    reply = _chat(page, "Write a few sentences about the sea.", watermark=True)
    assert len(reply.split()) > 10
    assert _check_last_reply(page) == "watermarked"

    page.goto(conversation)  # the conversation is kept: both turns are on the page
    assert "about the sea" in page.text_content("#messages")
    # Watermark off, greedy, in a fresh conversation: the same reply in every run, checked
    # against the fixed test key, so the verdict cannot flip one run in a hundred.
    page.goto(f"{live_server.url}/playground/")
    page.click("#new-conversation")
    page.wait_for_selector("#chat-form")
    reply = _chat(page, "Now write about mountains.", watermark=False, temperature="0")
    assert len(reply.split()) > 10
    # At most 80 tokens: no watermark found, but too short to clear (three-way verdict).
    assert _check_last_reply(page) == "inconclusive"
