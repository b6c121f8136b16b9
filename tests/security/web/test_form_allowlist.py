"""The body allowlist through a form: an audit's items sent as multipart parts.

DRF reads a list of objects from form parts named ``texts[0]client_id``, ``texts[0]text``
(``parse_html_list``). The JSON parser refuses a field inside an item that its declaration
does not name; the same item sent as form parts must be refused the same way, not have the
undeclared field dropped in silence."""

from __future__ import annotations

import pytest

from provenance.audits.models import Audit

pytestmark = pytest.mark.django_db


def _form(client, url, parts: dict[str, str]):
    boundary = "XyZ"
    body = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in parts.items()
    )
    return client.generic(
        "POST",
        url,
        (body + f"--{boundary}--\r\n").encode(),
        content_type=f"multipart/form-data; boundary={boundary}",
    )


@pytest.mark.parametrize("bad", ["texts[0]clientid", "texts[0]key_ids", "texts[0][text]"])
def test_an_undeclared_field_inside_a_form_item_is_refused(api_for, alice_key, bad):
    parts = {"texts[0]client_id": "a", "texts[0]text": "a text of a few words", bad: "x"}
    response = _form(api_for("alice"), "/api/v1/audits", parts)
    assert response.status_code == 400, (response.status_code, response.content)
    assert Audit.objects.count() == 0


def test_declared_form_items_are_still_accepted(api_for, alice_key):
    parts = {"texts[0]client_id": "a", "texts[0]text": "a text of a few words"}
    response = _form(api_for("alice"), "/api/v1/audits", parts)
    assert response.status_code in (200, 202), response.content
