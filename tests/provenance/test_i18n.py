"""The web UI in English, Japanese, Simplified Chinese and Korean: no page shows an English
string in another language (compared against the English page, names allowed), the switcher
remembers the choice, dates follow the language, and the API stays English with codes."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from django.contrib.auth.models import Permission

from provenance.audits.services import audit_score_chunk
from provenance.checks.models import Check
from provenance.checks.services import check_score

LANGUAGES = ["ja", "zh-hans", "ko"]
# Names and notation that are the same in every language.
ALLOWED = {
    "Provenance",
    "API",
    "JSON",
    "CSV",
    "REST",
    "SHA-256",
    "UTF-8",
    "Holm",
    "log10",
    "p",
    "ms",
    "id",
    "ID",
    "Token",
    "Authorization",
    "POST",
    "GET",
    "detect",
    "api",
    "v1",
    "audits",
    "vLLM",
    "gumbel",
    "dual_key_gumbel",
    "acme",
    "acme-main",
    "alice",
    "SmolLM2-135M",
    "SmolLM2-135M-Instruct",
    "txt",
    "md",
    "html",
    "docx",
    "pdf",
    "OCR",
    "JWS",
    "Ed25519",
    "PRF",
    "English",
    "top-p",
    "Top-p",
    "T",
    "e",
    "essay",
}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
# Text that is data, not interface: the checked text, code samples, the language names.
DATA = ["script", "style", "code", "pre", "textarea", "option", ".heatmap", ".span-line"]


def visible_strings(html: str) -> set[str]:
    soup = BeautifulSoup(html, "html.parser")
    for selector in DATA:
        for tag in soup.select(selector):
            tag.decompose()
    strings = {" ".join(s.split()) for s in soup.find_all(string=True)}
    attributes = {tag.get(a, "") for tag in soup.find_all(True) for a in ("title", "aria-label")}
    return {s for s in strings | attributes if s}


def english_words(text: str) -> list[str]:
    """Tokens with a run of two letters that are not allowed names (numbers such as
    4.85e-374 have none)."""
    tokens = (t.strip(".-") for t in TOKEN.findall(UUID.sub("", text)))
    return [t for t in tokens if re.search("[A-Za-z]{2}", t) and t not in ALLOWED]


@pytest.fixture
def pages(client, cast, alice_key, wm_text, api_for):
    """Every page of the product, rendered for alice (the playground granted), with data."""
    alice = cast["alice"]
    alice.user_permissions.add(Permission.objects.get(codename="use_playground"))
    api = api_for("alice")
    check_id = api.post("/api/v1/checks", {"text": wm_text}, format="json").json()["id"]
    check_score(check_id)
    audit = api.post("/api/v1/audits", {"texts": [{"text": wm_text}]}, format="json").json()
    audit_score_chunk(
        audit["id"], list(Check.objects.filter(audit_id=audit["id"]).values_list("id", flat=True))
    )
    client.force_login(alice)
    conversation = client.post("/playground/")["Location"]
    return [
        conversation,
        "/",
        "/checks/",
        f"/checks/{check_id}/",
        f"/checks/{check_id}/delete/",
        "/audits/",
        f"/audits/{audit['id']}/",
        f"/audits/{audit['id']}/delete/",
        "/keys/",
        "/accounts/token/",
        "/playground/",
        "/verify/",
    ]


def _get(client, path: str, language: str):
    response = client.get(path, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, (path, response.status_code)
    return response.content.decode()


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_page_shows_an_untranslated_english_string(client, pages, language):
    untranslated = {}
    for path in pages:
        english = visible_strings(_get(client, path, "en"))
        translated = _get(client, path, language)
        assert f'<html lang="{language}">' in translated
        left = [s for s in visible_strings(translated) if s in english and english_words(s)]
        if left:
            untranslated[path] = left
    assert untranslated == {}


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_login_page_is_translated(client, language):
    english = visible_strings(_get(client, "/accounts/login/", "en"))
    translated = visible_strings(_get(client, "/accounts/login/", language))
    assert [s for s in translated if s in english and english_words(s)] == []


def test_the_switcher_remembers_the_choice_over_accept_language(client, cast):
    client.force_login(cast["alice"])
    response = client.post("/i18n/setlang/", {"language": "ko", "next": "/"})
    assert response.status_code == 302 and response.cookies["django_language"].value == "ko"
    page = _get(client, "/", "ja")  # the cookie wins over the browser's language
    assert '<html lang="ko">' in page and "텍스트 검사" in page
    assert 'value="ko" lang="ko" selected' in page


def test_dates_follow_the_language(client, cast, alice_key, api_for):
    api_for("alice").post("/api/v1/checks", {"text": "some text"}, format="json")
    client.force_login(cast["alice"])

    def date_cell(language: str) -> str:
        soup = BeautifulSoup(_get(client, "/checks/", language), "html.parser")
        return soup.select("table.grid tbody td")[1].get_text()

    # English: month first and a 12-hour clock ("3 p.m.", "3:04 p.m.", "noon"); Japanese:
    # year first and a 24-hour clock.
    assert re.fullmatch(
        r"\d{2}/\d{2}/\d{4} (\d{1,2}(:\d{2})? [ap]\.m\.|noon|midnight)", date_cell("en")
    )
    assert re.fullmatch(r"\d{4}/\d{2}/\d{2} \d{1,2}:\d{2}", date_cell("ja"))


def test_the_api_answers_in_english_with_stable_codes(client, api_for, alice_key):
    api = api_for("alice")
    response = api.post("/api/v1/checks", {"text": " "}, format="json", HTTP_ACCEPT_LANGUAGE="ja")
    assert response.json() == {"detail": "text is empty", "code": "invalid"}
    anonymous = client.get("/api/v1/checks", HTTP_ACCEPT_LANGUAGE="ko")
    assert anonymous.status_code == 401
    assert anonymous.json() == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }
    missing = api.get(
        "/api/v1/audits/00000000-0000-4000-8000-000000000000", HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    client.cookies["django_language"] = "ja"
    bad = api.post("/api/v1/checks", {"text": 5}, format="json", HTTP_ACCEPT_LANGUAGE="ja")
    assert bad.json()["text"] == ["text must be a string."] and bad.json()["code"] == "invalid"


def test_the_page_shows_a_refused_document_in_its_language(client, cast, alice_key):
    import io

    client.force_login(cast["alice"])
    upload = io.BytesIO(b"data")
    upload.name = "notes.odt"
    page = client.post("/", {"text": "", "file": upload}, HTTP_ACCEPT_LANGUAGE="ja")
    assert page.status_code == 400
    assert "notes.odt: 対応していないファイル形式です" in page.content.decode()


@pytest.mark.parametrize("language", ["ja", "zh_Hans", "ko"])
def test_every_catalog_entry_is_translated(language):
    from babel.messages.pofile import read_po

    from provenance.i18n import LOCALE_DIR

    with (LOCALE_DIR / language / "LC_MESSAGES" / "django.po").open("rb") as po:
        catalog = read_po(po, locale=language)
    entries = [m for m in catalog if m.id]
    untranslated = [
        m.id
        for m in entries
        if m.fuzzy or not (m.string if isinstance(m.string, str) else all(m.string))
    ]
    assert len(entries) > 150 and untranslated == []
