"""One headless Debian Chromium per test session, shared by the browser tests over the
DevTools protocol: each test connects with Playwright and works in a fresh browser context
of its own (cookies, storage, locale and JavaScript setting apart), then disconnects."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.waiting import wait_until

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def start(directory: Path) -> tuple[subprocess.Popen, str]:
    """Chromium with its profile and log in ``directory``, listening on a free port; returns
    the process and its DevTools endpoint once it listens (it writes the port to the
    profile's ``DevToolsActivePort`` then)."""
    profile, log = directory / "profile", directory / "chromium.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [CHROMIUM, *ARGS, "--remote-debugging-port=0", f"--user-data-dir={profile}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # /usr/bin/chromium is a script: stop its whole group
        )
    active = profile / "DevToolsActivePort"
    port = wait_until(
        lambda: active.is_file() and active.read_text().split()[:1],
        60,
        0.1,
        alive=lambda: process.poll() is None,
        what=lambda: f"Chromium's DevTools port:\n{log.read_text()[-2000:]}",
    )
    return process, f"http://127.0.0.1:{port[0]}"


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(20)


@contextmanager
def connected(endpoint: str) -> Iterator[Any]:
    """Playwright's browser, connected to the session's Chromium. Playwright's sync API runs
    an event loop in this thread meanwhile, so the ORM is let through (the tests' own work)."""
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(endpoint)
            try:
                yield browser
            finally:
                browser.close()  # closes the contexts this test made and disconnects
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def csp_watched_page(context: Any) -> Any:
    """A new page of ``context`` that keeps what the Content-Security-Policy blocked (Chromium
    reports it on its console) in ``page.csp_violations``."""
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.csp_violations = []

    def console(msg: Any) -> None:
        if "Content Security Policy" in msg.text:
            page.csp_violations.append(msg.text)

    page.on("console", console)
    return page
