"""The printable report page: the signed payload for a reader, and the reason when there is
none yet."""

from __future__ import annotations

import pytest

from provenance.reports.selectors import jwks
from tests.provenance.reports.reports_data import scored_check

pytestmark = pytest.mark.django_db


def test_the_page_shows_the_token_and_the_key_that_signed_it(
    client, cast, api_for, alice_key, wm_text
):
    check_id = scored_check(api_for("alice"), wm_text)
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{check_id}/report/")
    assert page.status_code == 200
    html = page.content.decode()
    (kid,) = [k["kid"] for k in jwks()["keys"]]
    assert 'id="report-jws"' in html and kid in html and page.context["kid"] == kid
    assert page.context["payload"]["subject"]["id"] == check_id


def test_a_pending_check_shows_why_there_is_no_report(client, cast, api_for, alice_key):
    alice = api_for("alice")
    check_id = alice.post("/api/v1/checks", {"text": "pending"}, format="json").json()["id"]
    client.force_login(cast["alice"])
    page = client.get(f"/checks/{check_id}/report/")
    assert page.status_code == 409 and 'id="report-error"' in page.content.decode()


def test_the_page_needs_a_login_and_the_check_s_team(client, cast, api_for, alice_key, wm_text):
    check_id = scored_check(api_for("alice"), wm_text)
    assert client.get(f"/checks/{check_id}/report/").status_code == 302
    client.force_login(cast["charlie"])
    assert client.get(f"/checks/{check_id}/report/").status_code == 404
