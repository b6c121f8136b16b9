"""The keys page (which keys a team tests, never their values) and queueing a calibration."""

from __future__ import annotations

import pytest

from provenance.accounts.models import Membership
from provenance.keys.models import KeyCalibration
from provenance.keys.services import key_create
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def test_only_an_admin_of_the_keys_team_may_calibrate_it(client, cast, alice_key):
    client.force_login(cast["bob"])  # a member, not an admin
    assert client.post(f"/keys/{alice_key.id}/calibrate").status_code == 403
    assert "Calibrate</button>" not in client.get("/keys/").content.decode()
    client.force_login(cast["charlie"])  # another team: the key does not exist for him
    assert client.post(f"/keys/{alice_key.id}/calibrate").status_code == 404
    assert not KeyCalibration.objects.exists()


def test_the_page_lists_own_and_shared_keys_and_no_value(client, cast, alice_key, tokenizer_row):
    key_create(name="shared-one", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    key_create(name="private-one", team=cast["other"], tokenizer=tokenizer_row)
    client.force_login(cast["bob"])
    page = client.get("/keys/")
    html = page.content.decode()
    assert page.status_code == 200 and "acme-main" in html and "shared-one" in html
    assert "private-one" not in html
    assert str(KEY_VALUE) not in html and f"{KEY_VALUE:x}" not in html


def test_the_pages_need_a_login_and_calibrating_needs_a_post(client, cast, alice_key):
    assert client.get("/keys/").status_code == 302
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    client.force_login(cast["alice"])
    assert client.get(f"/keys/{alice_key.id}/calibrate").status_code == 405


def test_a_team_admin_queues_one_calibration_however_often_asked(client, cast, alice_key):
    Membership.objects.filter(user=cast["alice"]).update(is_admin=True)
    client.force_login(cast["alice"])
    for _ in range(2):
        answer = client.post(f"/keys/{alice_key.id}/calibrate")
        assert answer.status_code == 302 and answer["Location"] == "/keys/"
    run = KeyCalibration.objects.get(key=alice_key)  # one, though asked twice
    assert run.requested_by == cast["alice"] and run.status == "pending"
    assert "queued or running" in client.get("/keys/").content.decode()
