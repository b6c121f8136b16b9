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


def test_the_keys_page_draws_each_keys_calibration(client, cast, alice_key):
    import re

    from tests.provenance.keys.test_selectors import finished_calibration

    finished_calibration(alice_key, assisted=True)
    client.force_login(cast["bob"])
    page = client.get("/keys/").content.decode()
    rates = re.search(rf'<svg id="fpr-chart-{alice_key.id}".*?</svg>', page, re.S).group(0)
    assert 'role="img"' in rates and f'aria-labelledby="fpr-title-{alice_key.id}' in rates
    assert "<title" in rates and "<desc" in rates and "<script" not in rates
    # Four rows: three genres and the model-assisted prose; prose flagged in red.
    assert rates.count('<circle class="rate') == 4 and 'class="rate above"' in rates
    assert 'class="rate assisted"' in rates and "threshold 0.01" in rates
    assert "prose: 12 of 300 texts flagged, rate 0.0400, 95% interval" in rates
    power = re.search(rf'<svg id="power-chart-{alice_key.id}".*?</svg>', page, re.S).group(0)
    assert power.count("<polyline") == 2 and power.count('class="needed') == 1
    assert "At T=1.0, top-p 1.0: 80% are detected from 100 tokens on." in power
    assert "At T=0.7, top-p 0.9: 80% are not detected within 150 tokens." in power


def test_a_key_without_calibration_or_power_draws_no_chart(client, cast, alice_key, tokenizer_row):
    from tests.provenance.keys.test_selectors import finished_calibration

    other, _ = key_create(name="acme-second", team=cast["acme"], tokenizer=tokenizer_row)
    finished_calibration(other, power=False)
    client.force_login(cast["alice"])
    page = client.get("/keys/").content.decode()
    assert f'id="fpr-chart-{alice_key.id}"' not in page  # not calibrated yet
    assert f'id="fpr-chart-{other.id}"' in page and 'id="power-chart-' not in page


@pytest.mark.parametrize("language", ["ja", "zh-hans", "ko"])
def test_the_charts_speak_the_pages_language(client, cast, alice_key, language):
    from tests.provenance.keys.test_selectors import finished_calibration
    from tests.provenance.test_i18n import english_words, visible_strings

    run = finished_calibration(alice_key, assisted=True)
    corpora = {rate.corpus for rate in run.rates.all()}  # data: the corpus as measured
    client.force_login(cast["alice"])
    english = visible_strings(client.get("/keys/", HTTP_ACCEPT_LANGUAGE="en").content.decode())
    page = client.get("/keys/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    left = [s for s in visible_strings(page) - corpora if s in english and english_words(s)]
    assert left == []
