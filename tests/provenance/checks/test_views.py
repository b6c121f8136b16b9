"""Pages: paste-and-check without JavaScript, the verdict, the heatmap and the chart."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from provenance.checks.models import Check, Hypothesis
from provenance.checks.services import check_score
from provenance.checks.views import DOCUMENT_MESSAGES
from provenance.keys.services import key_create
from tests.provenance.watermark import default_tokens_needed


@pytest.fixture
def alice_client(client, cast):
    client.force_login(cast["alice"])
    return client


def _heatmap(page: str) -> str:
    """The text inside the heatmap box, as the server sent it (no script has run)."""
    return re.search(r'<div class="heatmap" id="heatmap"[^>]*>(.*?)</div>', page, re.S).group(1)


def _scores(page: str) -> list[int]:
    """Per-token scores (hundredths; -1 skipped) from the triples the page's script reads."""
    numbers = [int(n) for n in re.search(r'data-tokens="([-0-9,]*)"', page).group(1).split(",")]
    assert len(numbers) % 3 == 0
    return numbers[2::3]


def _submit(client, text):
    response = client.post("/", {"text": text})
    assert response.status_code == 302
    return re.search(r"/checks/([0-9a-f-]{36})/", response["Location"]).group(1)


def test_pages_need_a_login(client, db):
    for url in ["/", "/checks/", "/audits/", "/keys/"]:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_login_page_logs_in(client, cast):
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_a_pending_check_shows_progress_and_refreshes_without_javascript(alice_client, alice_key):
    # the API without ?wait= leaves it to the worker (the page's form scores a short text)
    answer = alice_client.post("/api/v1/checks", {"text": "a text to check"}, "application/json")
    check_id = answer.json()["id"]
    assert answer.json()["status"] == "pending"
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    assert "Scoring" in page and '<meta http-equiv="refresh"' in page


def test_a_watermarked_text_shows_the_verdict_table_heatmap_and_chart(
    alice_client, alice_key, wm_text
):
    check_id = _submit(alice_client, wm_text)
    check_score(check_id)
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    assert 'data-verdict="watermarked"' in page and "acme-main" in page
    assert "tokenizer SmolLM2-135M" in page
    assert 'id="hypotheses"' in page and "<svg" in page and "<polyline" in page
    assert 'http-equiv="refresh"' not in page
    check = Check.objects.get(id=check_id)
    assert html.unescape(_heatmap(page)) == wm_text  # readable without JavaScript
    scores = _scores(page)
    assert len(scores) == check.num_tokens
    assert sum(s >= 200 for s in scores) > check.num_scored_tokens / 2  # keyed draws score high


def test_a_short_human_text_is_inconclusive_with_cool_tokens(alice_client, alice_key, human_text):
    check_id = _submit(alice_client, human_text)
    check_score(check_id)
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    assert 'class="verdict inconclusive" id="verdict" data-verdict="inconclusive"' in page
    reason = re.search(r'id="verdict-reason">([^<]*)<', page).group(1)
    n = Check.objects.get(id=check_id).num_scored_tokens
    needed = default_tokens_needed()
    assert 0 < n < needed
    assert reason == (
        f"Only {n} tokens could be scored; about {needed} are needed for text of this kind."
    )
    scores = [s for s in _scores(page) if s >= 0]
    assert sum(s < 100 for s in scores) > sum(s >= 200 for s in scores)


def test_a_long_human_text_is_not_watermarked(alice_client, alice_key):
    """A licence's first 5,000 characters: enough scored tokens that a watermarked text of
    the default (low-entropy) kind would have been detected."""
    text = Path("/usr/share/common-licenses/GPL-3").read_text()[:5000]
    check_id = _submit(alice_client, text)
    check_score(check_id)
    check = Check.objects.get(id=check_id)
    assert check.verdict == "not_watermarked" and check.num_scored_tokens > 300
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    assert 'data-verdict="not-watermarked"' in page and "Not watermarked" in page
    assert "suffice for text of this kind" in page
    listed = alice_client.get("/checks/").content.decode()
    assert 'class="verdict-cell not_watermarked"' in listed


def test_skipped_tokens_are_distinguishable(alice_client, alice_key):
    check_id = _submit(alice_client, "one two three four five. " * 6)
    check_score(check_id)
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    scores = _scores(page)
    assert -1 in scores and any(s >= 0 for s in scores)
    assert "skipped (repeated context)" in page  # the legend


def test_the_heatmap_text_survives_html_parsing_character_for_character(alice_client, alice_key):
    text = 'Line one\r\nline <two> & "three"\rfour 🙂 five'
    check_id = _submit(alice_client, text)
    check_score(check_id)
    box = _heatmap(alice_client.get(f"/checks/{check_id}/").content.decode())
    assert "<two>" not in box and "\r" not in box  # escaped; CR as &#13; (a parser keeps it)
    assert html.unescape(box) == text


def test_a_long_texts_page_stays_small(alice_client, alice_key, wm_text):
    text = (wm_text + "\n\n") * 40
    check_id = _submit(alice_client, text)
    check_score(check_id)
    page = alice_client.get(f"/checks/{check_id}/").content
    check = Check.objects.get(id=check_id)
    # The text itself, 8 bytes or so a token, and the rest of the page; spans with titles
    # took about 200 bytes a token.
    assert len(page) < len(text.encode()) + 12 * check.num_tokens + 20_000


def test_pages_carry_no_inline_script_and_no_external_asset(alice_client, alice_key, wm_text):
    check_id = _submit(alice_client, wm_text)
    check_score(check_id)
    for url in ["/", f"/checks/{check_id}/", "/checks/", "/audits/", "/keys/"]:
        page = alice_client.get(url).content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), url
        assert not re.search(r'(src|href)="(https?:)?//', page), url
        assert " style=" not in page, url


def test_the_static_assets_are_served_by_the_app(alice_client):
    for asset in ["/static/provenance/app.css", "/static/provenance/app.js"]:
        response = alice_client.get(asset)
        assert response.status_code == 200


def test_an_empty_paste_shows_the_error_and_stores_nothing(alice_client, alice_key):
    response = alice_client.post("/", {"text": "   "})
    assert response.status_code == 400 and "empty" in response.content.decode()
    assert Check.objects.count() == 0


def test_an_oversized_paste_answers_413(alice_client, alice_key, settings):
    settings.PROVENANCE_MAX_TEXT_BYTES = 50
    response = alice_client.post("/", {"text": "x" * 51})
    assert response.status_code == 413 and Check.objects.count() == 0


def test_charlie_cannot_open_alices_check_page(client, cast, alice_key, wm_text):
    client.force_login(cast["alice"])
    check_id = _submit(client, wm_text)
    client.force_login(cast["charlie"])
    assert client.get(f"/checks/{check_id}/").status_code == 404
    history = client.get("/checks/").content.decode()
    assert f"/checks/{check_id}/" not in history and "No checks yet" in history


def test_the_history_and_audit_pages_list_the_teams_work(api_for, client, cast, alice_key):
    api_for("alice").post("/api/v1/audits", {"texts": [{"text": "hello"}]}, format="json")
    client.force_login(cast["bob"])
    client.post("/api/v1/checks", {"text": "bob's text"}, "application/json")  # to the worker
    assert "pending" in client.get("/checks/").content.decode()
    audits = client.get("/audits/").content.decode()
    audit_id = re.search(r'href="/audits/([0-9a-f-]{36})/"', audits).group(1)
    detail = client.get(f"/audits/{audit_id}/").content.decode()
    assert "export.csv" in detail and "1 texts" in detail


def test_a_user_creates_an_api_token_that_authenticates(alice_client, alice_key):
    page = alice_client.get("/accounts/token/").content.decode()
    assert "no token yet" in page
    created = alice_client.post("/accounts/token/").content.decode()
    token = re.search(r'<code id="api-token">([0-9a-f]{64})</code>', created).group(1)
    assert token not in alice_client.get("/accounts/token/").content.decode()  # shown once
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.post("/detect", {"text": "some words"}, format="json").status_code == 200
    alice_client.post("/accounts/token/")  # replacing revokes the old one
    assert api.post("/detect", {"text": "some words"}, format="json").status_code == 401


def test_a_refused_document_shows_the_pages_message_and_stores_nothing(alice_client, alice_key):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("essay.exe", b"MZ\x90\x00 not a document")
    response = alice_client.post("/", {"text": "", "file": upload})
    assert response.status_code == 400 and Check.objects.count() == 0
    expected = str(DOCUMENT_MESSAGES["document_unsupported"]) % {"file": "essay.exe"}
    assert html.escape(expected, quote=False) in response.content.decode()


# --- history: filters, search, paging ------------------------------------------------------


def test_the_history_filters_by_verdict_with_labelled_controls(alice_client, cast, alice_key):
    from tests.provenance.checks.test_filters import history_row

    marked = history_row(cast["alice"], verdict="watermarked", key=alice_key)
    human = history_row(cast["bob"], verdict="not_watermarked", key=alice_key, filename="b.txt")
    page = alice_client.get("/checks/?verdict=watermarked").content.decode()
    assert str(marked.id) in page and str(human.id) not in page
    assert 'id="history-count">1 check<' in page
    for name in ("verdict", "since", "until", "key_id", "q"):
        assert f'<label for="id_{name}">' in page and f'id="id_{name}"' in page
    assert 'name="submitter"' not in page  # alice is no team admin
    assert 'type="date"' in page and 'type="search"' in page
    assert '<option value="watermarked" selected>' in page
    everything = alice_client.get("/checks/").content.decode()
    assert str(human.id) in everything and "b.txt" in everything


def test_the_history_searches_by_document_name(alice_client, cast, alice_key):
    from tests.provenance.checks.test_filters import history_row

    essay = history_row(cast["bob"], verdict="inconclusive", filename="Essay of Jane.pdf")
    history_row(cast["bob"], verdict="inconclusive", filename="notes.txt")
    page = alice_client.get("/checks/", {"q": "jane"}).content.decode()
    assert str(essay.id) in page and "notes.txt" not in page
    nothing = alice_client.get("/checks/", {"q": "nobody"}).content.decode()
    assert "No check matches these filters." in nothing and 'id="filter-clear"' in nothing


def test_a_bad_filter_answers_400_with_the_reason_and_lists_nothing(alice_client, cast):
    from tests.provenance.checks.test_filters import history_row

    row = history_row(cast["alice"], verdict="watermarked")
    response = alice_client.get("/checks/", {"since": "2026-12-01", "until": "2026-11-01"})
    page = response.content.decode()
    assert response.status_code == 400 and 'id="filter-errors"' in page
    assert "the start date lies after the end date" in page and str(row.id) not in page
    refused = alice_client.get("/checks/", {"submitter": "bob"})
    assert refused.status_code == 400
    assert "only a team admin may filter by submitter" in refused.content.decode()


def test_a_team_admin_filters_the_history_by_submitter(alice_client, cast):
    from provenance.accounts.models import Membership
    from tests.provenance.checks.test_filters import history_row

    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    mine = history_row(cast["alice"], verdict="watermarked")
    bobs = history_row(cast["bob"], verdict="watermarked")
    page = alice_client.get("/checks/", {"submitter": "bob"}).content.decode()
    assert '<label for="id_submitter">' in page and '<option value="charlie"' not in page
    assert str(bobs.id) in page and str(mine.id) not in page


def test_the_history_pages_keep_the_filters(alice_client, cast, monkeypatch):
    from provenance.checks import views
    from tests.provenance.checks.test_filters import history_row

    monkeypatch.setattr(views, "HISTORY_PAGE", 2)
    rows = [history_row(cast["alice"], verdict="watermarked", days_ago=i) for i in range(5)]
    history_row(cast["alice"], verdict="inconclusive")
    first = alice_client.get("/checks/", {"verdict": "watermarked"}).content.decode()
    assert "page 1 of 3" in first and "5 checks" in first
    assert 'href="?verdict=watermarked&amp;page=2" rel="next"' in first
    third = alice_client.get("/checks/", {"verdict": "watermarked", "page": 3}).content.decode()
    assert str(rows[4].id) in third and str(rows[0].id) not in third
    assert 'href="?verdict=watermarked&amp;page=2" rel="prev"' in third


def _tied_at_basic_tier(cast, alice_key, tokenizer_row, check_id):
    """Two hypotheses whose corrected p-values round to the same power of ten, the second
    the smaller: the decision's best, as stored, is the second."""
    check = Check.objects.get(id=check_id)
    first, second = Hypothesis.objects.filter(check_run=check).order_by("index")
    Hypothesis.objects.filter(pk=first.pk).update(adjusted_log10_p=-5.2)
    Hypothesis.objects.filter(pk=second.pk).update(adjusted_log10_p=-5.9)
    Check.objects.filter(id=check_id).update(best_index=second.index, best_key=second.key)
    cast["acme"].oracle_tier = "basic"
    cast["acme"].save()
    return second


def test_on_a_rounded_tie_the_page_names_and_highlights_the_decisions_best_key(
    alice_client, cast, alice_key, tokenizer_row, wm_text
):
    key_create(name="acme-second", team=cast["acme"], tokenizer=tokenizer_row, value=7)
    check_id = _submit(alice_client, wm_text)
    check_score(check_id)
    best = _tied_at_basic_tier(cast, alice_key, tokenizer_row, check_id)
    page = alice_client.get(f"/checks/{check_id}/").content.decode()
    named = re.search(r'<dd id="best-key">(.*?)</dd>', page, re.S).group(1)
    assert best.key_name in named
    highlighted = re.findall(r'<tr class="best">(.*?)</tr>', page, re.S)
    assert len(highlighted) == 1 and best.key_name in highlighted[0]


def test_the_page_names_the_correction_the_decision_applied(alice_client, alice_key, wm_text):
    """The hypotheses line names the stored correction, never one of its own."""
    check_id = _submit(alice_client, wm_text)
    check_score(check_id)
    stored = Check.objects.get(id=check_id).correction
    facts = re.search(r"<dt>hypotheses</dt><dd>(.*?)</dd>", _page(alice_client, check_id), re.S)
    assert f"{stored.capitalize()}-corrected" in facts.group(1)
    Check.objects.filter(id=check_id).update(correction="bonferroni")
    facts = re.search(r"<dt>hypotheses</dt><dd>(.*?)</dd>", _page(alice_client, check_id), re.S)
    assert "Bonferroni-corrected" in facts.group(1) and stored.capitalize() not in facts.group(1)


def _page(client, check_id) -> str:
    return client.get(f"/checks/{check_id}/").content.decode()
