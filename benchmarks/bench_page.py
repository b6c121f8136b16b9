"""Result page of a long document: a 190 kB text (about 45k tokens) checked and opened in
Chromium (Debian's, through Playwright) from a real gunicorn server.

Measured: the page's bytes (target <= 2 MB), the server's time to answer it, and the time
from navigation start until the heatmap is built by the page's script (median of --loads;
target <= 1 s), side by side with the same page with JavaScript off (plain text, no
heatmap); and the API detail without and with ``?tokens=1``.

Run: ``python benchmarks/bench_page.py`` (needs /usr/bin/chromium; never `playwright install`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CHROMIUM = "/usr/bin/chromium"
PASSWORD = "bench-pass-123"


def _env(tmp: Path) -> dict[str, str]:
    from cryptography.fernet import Fernet

    env = {
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "PROVENANCE_KEK": Fernet.generate_key().decode(),
        "PROVENANCE_DATA_DIR": str(tmp),
        "PROVENANCE_LOG_LEVEL": "WARNING",
        # No broker: the check is scored in this process; nothing waits on the queue.
        "REDIS_URL": "redis://127.0.0.1:9/0",
        "OMP_NUM_THREADS": "1",
    }
    os.environ.update(env)
    return {**os.environ, **env}


def _long_text(key_value: int, size: int) -> str:
    """A watermarked passage at the start, then distinct human prose up to ``size`` bytes."""
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer
    from tests.provenance.watermark import watermarked_ids

    marked = load_tokenizer("default").decode(watermarked_ids(key_value, 2000, seed=5))
    text = marked + "\n\n" + english_prose(size)
    return text.encode()[:size].decode(errors="ignore")


def _setup(key_value: int, text: str) -> str:
    """Migrate, create a user and a key, store and score the check; returns its id."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from provenance.accounts.services import team_create, user_create
    from provenance.checks.services import check_create, check_score
    from provenance.keys.services import key_create, tokenizer_default

    call_command("migrate", verbosity=0)
    team = team_create(name="bench")
    user = user_create(username="bench", password=PASSWORD, team=team)
    key_create(name="bench-key", team=team, tokenizer=tokenizer_default(), value=key_value)
    check = check_create(user=user, text=text)
    check_score(check.id)
    return str(check.id)


def _serve(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "gunicorn", "provenance.wsgi:application"]
    args += ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "4"]
    with log.open("wb") as out:
        server = subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=1)
            return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"gunicorn did not start:\n{log.read_text()[-2000:]}")


def _login(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "bench")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#id_text")


def _load_ms(page, url: str, with_js: bool) -> float:
    """Milliseconds from navigation start to the heatmap built (JS) or to the load event."""
    page.goto(url, wait_until="load")
    if with_js:
        page.wait_for_selector("#heatmap[data-ready]")
        return page.evaluate("performance.getEntriesByName('heatmap-ready')[0].startTime")
    return page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")


def _browser_loads(base: str, url: str, loads: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    out: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        for with_js in (True, False):
            context = browser.new_context(java_script_enabled=with_js)
            page = context.new_page()
            _login(page, base)
            _load_ms(page, url, with_js)  # warm: static assets cached, connection open
            out["js" if with_js else "nojs"] = [_load_ms(page, url, with_js) for _ in range(loads)]
            if with_js:
                page.locator("#heatmap .tok").nth(500).hover()
                assert "score" in page.text_content("#token-info")
                out["spans"] = [float(page.locator("#heatmap .tok").count())]
            context.close()
        browser.close()
    return out


def _server_side(base: str, check_id: str) -> dict[str, float]:
    with httpx.Client(base_url=base, timeout=60) as client:
        page = client.get("/accounts/login/")
        token = client.cookies["csrftoken"]
        client.post(
            "/accounts/login/",
            data={"username": "bench", "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/accounts/login/"},
        )
        times, size = [], 0
        for _ in range(5):
            start = time.perf_counter()
            page = client.get(f"/checks/{check_id}/")
            times.append((time.perf_counter() - start) * 1000)
            size = len(page.content)
        compact = len(client.get(f"/api/v1/checks/{check_id}").content)
        tokens = len(client.get(f"/api/v1/checks/{check_id}?tokens=1").content)
    return {"page": size, "server_ms": statistics.median(times), "api": compact, "tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=190_000, help="text bytes")
    parser.add_argument("--loads", type=int, default=5)
    options = parser.parse_args()
    from provenance.runner.redis_server import free_port

    key_value = int.from_bytes(os.urandom(8), "big") | 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = _env(tmp)
        text = _long_text(key_value, options.size)
        check_id = _setup(key_value, text)
        from provenance.checks.models import Check

        check = Check.objects.get(id=check_id)
        port = free_port()
        server = _serve(env, port, tmp / "gunicorn.log")
        try:
            base = f"http://127.0.0.1:{port}"
            sizes = _server_side(base, check_id)
            loads = _browser_loads(base, f"{base}/checks/{check_id}/", options.loads)
        finally:
            server.terminate()
            server.wait(10)
    _report(text, check, sizes, loads)


def _report(text: str, check, sizes: dict[str, float], loads: dict[str, list[float]]) -> None:
    js, nojs = statistics.median(loads["js"]), statistics.median(loads["nojs"])
    print(
        f"result page of a {len(text.encode()):,}-byte text ({check.num_tokens:,} tokens, "
        f"scored in {check.scoring_ms:.0f} ms; verdict watermarked={check.is_watermarked}):"
    )
    print(
        f"  page {sizes['page'] / 1e6:.2f} MB (target <= 2 MB; ratio {sizes['page'] / 2e6:.2f}),"
        f" server answers in {sizes['server_ms']:.0f} ms (median of 5)"
    )
    print(
        f"  Chromium, navigation start to heatmap built ({int(loads['spans'][0]):,} spans):"
        f" median {js:.0f} ms of {len(loads['js'])} loads {[round(v) for v in loads['js']]}"
        f" (target <= 1000 ms; ratio {js / 1000:.2f})"
    )
    print(
        f"  same page with JavaScript off (plain text): load event at {nojs:.0f} ms;"
        f" the heatmap costs {js - nojs:.0f} ms ({js / max(nojs, 1):.2f}x)"
    )
    print(
        f"  API detail {sizes['api'] / 1e3:.1f} kB; with ?tokens=1 {sizes['tokens'] / 1e6:.2f} MB"
        f" ({sizes['tokens'] / sizes['api']:.0f}x)"
    )


if __name__ == "__main__":
    main()
