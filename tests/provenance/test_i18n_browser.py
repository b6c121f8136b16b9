"""Chromium renders one result page per language with Debian's Noto CJK fonts: screenshots
(into $PROVENANCE_SCREENSHOTS when set), real glyphs rather than boxes, and the print view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from provenance.checks.services import check_create, check_score
from tests.provenance.chromium import connected

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Per language: the verdict's expected text and two characters of its script.
LANGUAGES = {
    "en": ("Watermarked", "W", "q"),
    "ja": ("透かしあり", "検", "証"),
    "zh-hans": ("有水印", "检", "验"),
    "ko": ("워터마크 있음", "검", "증"),
}
# Draws each character with the page's own font and returns the pixels: a missing glyph is
# the same empty box for every character, a real glyph differs from the other one.
GLYPHS = """([a, b]) => {
  const font = "48px " + getComputedStyle(document.body).fontFamily;
  const draw = (ch) => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 64;
    const ctx = canvas.getContext("2d");
    ctx.font = font;
    ctx.fillText(ch, 4, 52);
    return Array.from(ctx.getImageData(0, 0, 64, 64).data.filter((_, i) => i % 4 === 3));
  };
  const pa = draw(a), pb = draw(b), tofu = draw("\\u{10FFFD}");
  const ink = (p) => p.filter((v) => v > 0).length;
  const same = (p, q) => p.every((v, i) => v === q[i]);
  return {inkA: ink(pa), inkB: ink(pb), differ: !same(pa, pb), tofuA: same(pa, tofu)};
}"""


@pytest.fixture
def result_page(live_server, cast, alice_key, wm_text):
    check = check_create(user=cast["alice"], text=wm_text)
    check_score(check.id)
    return f"{live_server.url}/checks/{check.id}/"


def _screenshot_dir(tmp_path: Path) -> Path:
    directory = Path(os.environ.get("PROVENANCE_SCREENSHOTS") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_the_result_page_renders_in_each_language_with_real_glyphs(
    live_server, result_page, tmp_path, chromium
):
    directory = _screenshot_dir(tmp_path)
    with connected(chromium) as browser:
        for language, (verdict, a, b) in LANGUAGES.items():
            context = browser.new_context(locale=language, viewport={"width": 1000, "height": 900})
            page = context.new_page()
            page.goto(f"{live_server.url}/accounts/login/")
            page.fill("input[name=username]", "alice")
            page.fill("input[name=password]", "alice-pass-123")
            page.click("button[type=submit]")
            page.select_option("#id_language", language)  # the switcher, as a user would
            page.click("#language-submit")
            page.goto(result_page)
            assert page.get_attribute("html", "lang") == language, page.content()[:3000]
            assert page.is_visible("#verdict"), page.content()[:3000]
            assert verdict in page.text_content("#verdict")
            glyphs = page.evaluate(GLYPHS, [a, b])
            assert glyphs["inkA"] > 50 and glyphs["inkB"] > 50, glyphs
            assert glyphs["differ"] and not glyphs["tofuA"], glyphs
            shot = directory / f"result-page-{language}.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            page.emulate_media(media="print")
            assert not page.is_visible("header.top") and page.is_visible("#verdict")
            assert not page.is_visible("#check-actions")
            if language == "ja":
                page.screenshot(path=str(directory / "result-page-ja-print.png"), full_page=True)
            context.close()
