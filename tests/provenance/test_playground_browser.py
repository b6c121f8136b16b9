"""Chromium chats in the playground of the running product (live server, real worker, the
embedded generator): a streamed watermarked reply is checked and found watermarked; with the
watermark switched off, the reply is not."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from tests.provenance.test_browser import browser_page  # noqa: F401  (fixture)
from tests.provenance.test_playground_generator import generator  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _chat(page, prompt: str, watermark: bool) -> str:
    """Send a prompt; wait until the reply is seen streaming, then complete; returns it."""
    page.fill("#id_content", prompt)
    page.set_checked("#id_watermark", watermark)
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
    assert page.is_hidden("#stop") and page.is_enabled("#send")
    reply = page.locator(".msg.assistant.done").last
    return reply.locator(".body").text_content()


def _check_last_reply(page) -> str:
    page.locator(".msg.assistant.done").last.locator(".check-reply").click()
    page.wait_for_selector("#verdict", timeout=60_000)
    return page.get_attribute("#verdict", "data-verdict")


def test_a_user_chats_sees_the_reply_stream_and_checks_it(
    celery_worker,
    live_server,
    cast,
    alice_key,
    generator,
    browser_page,  # noqa: F811
):
    cast["alice"].user_permissions.add(Permission.objects.get(codename="use_playground"))
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.click("text=Playground")
    page.click("#new-conversation")
    page.wait_for_selector("#chat-form")
    conversation = page.url

    reply = _chat(page, "Write a few sentences about the sea.", watermark=True)
    assert len(reply.split()) > 10
    assert _check_last_reply(page) == "watermarked"

    page.goto(conversation)  # the conversation is kept: both turns are on the page
    assert "about the sea" in page.text_content("#messages")
    reply = _chat(page, "Now write about mountains.", watermark=False)
    assert len(reply.split()) > 10
    # At the 1% level by design: about one run in a hundred finds a false positive.
    assert _check_last_reply(page) == "not-watermarked"
