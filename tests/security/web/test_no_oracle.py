"""No oracle for keys a team does not own: another team checking text against a shared key
reads the verdict and a coarse p, never per-token scores, exact scores or exact p-values
(with them a forger picks, token by token, the continuation the key favours). New teams
start at the basic tier; sharing a key needs its own permission and is capped."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from django.contrib.auth.models import Permission

from detector.reports.signed import verify
from provenance.accounts.models import Team
from provenance.accounts.services import team_create, user_sync_from_groups
from provenance.keys.services import key_create

pytestmark = pytest.mark.django_db


def _exact_numbers(value, found):
    """Every score, p-value and log10 p of an answer that is more precise than the coarse
    tier allows (a score that is not null, a log10 p that is not an integer)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "score" and item is not None:
                found.append((key, item))
            elif key == "p_value" and isinstance(item, float) and item > 0:
                if math.log10(item) != pytest.approx(round(math.log10(item))):
                    found.append((key, item))
            elif key.endswith("log10_p") or key == "log10_p_anytime" or key == "log10_e_value":
                if isinstance(item, float) and item != int(item):
                    found.append((key, item))
            else:
                _exact_numbers(item, found)
    elif isinstance(value, list):
        for item in value:
            _exact_numbers(item, found)
    return found


@pytest.fixture
def shared_key(alice_key):
    alice_key.shared = True
    alice_key.save()
    return alice_key


def _check(client, text):
    response = client.post("/api/v1/checks?wait=5", {"text": text}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_another_team_reads_no_per_token_data_of_a_shared_key(api_for, shared_key, wm_text):
    charlie = api_for("charlie")  # an auditor-tier team that does not own the key
    check_id = _check(charlie, wm_text)
    answers = {
        "tokens": charlie.get(f"/api/v1/checks/{check_id}?tokens=1").json(),
        "detail": charlie.get(f"/api/v1/checks/{check_id}").json(),
        "list": charlie.get("/api/v1/checks").json(),
        "export.json": charlie.get(f"/api/v1/checks/{check_id}/export.json").json(),
        "detect": charlie.post("/detect", {"text": wm_text}, format="json").json(),
    }
    assert answers["detail"]["is_watermarked"] is True  # the verdict is still answered
    for name, answer in answers.items():
        assert "heatmap" not in json.dumps(answer), name
        assert _exact_numbers(answer, []) == [], name
    rows = list(
        csv.DictReader(
            io.StringIO(charlie.get(f"/api/v1/checks/{check_id}/export.csv").content.decode())
        )
    )
    assert rows and all(row["score"] in ("", None) for row in rows)
    report = charlie.get(f"/api/v1/checks/{check_id}/report").content.decode()
    payload = verify(report, charlie.get("/.well-known/jwks.json").json()).payload
    assert _exact_numbers(payload, []) == []


def test_the_page_shows_no_heatmap_or_chart_of_a_shared_key(
    client, cast, shared_key, wm_text, api_for
):
    check_id = _check(api_for("charlie"), wm_text)
    client.force_login(cast["charlie"])
    page = client.get(f"/checks/{check_id}/").content
    assert b'id="heatmap"' not in page and b'id="evidence-chart"' not in page


def test_a_stream_on_a_shared_key_reads_coarse_evidence(api_for, shared_key):
    charlie = api_for("charlie")
    stream = charlie.post("/api/v1/streams", {}, format="json").json()
    state = charlie.post(
        f"/api/v1/streams/{stream['id']}/append", {"token_ids": list(range(40))}, format="json"
    ).json()
    assert "keys" not in state and "log10_e_value" not in state
    assert state["log10_p_anytime"] == int(state["log10_p_anytime"])


def test_the_owner_still_reads_everything(api_for, shared_key, wm_text):
    alice = api_for("alice")
    check_id = _check(alice, wm_text)
    answer = alice.get(f"/api/v1/checks/{check_id}?tokens=1").json()
    assert "heatmap" in answer and _exact_numbers(answer, [])


def test_new_teams_start_at_the_basic_tier(cast, django_user_model):
    assert team_create(name="fresh").oracle_tier == Team.OracleTier.BASIC
    user = django_user_model.objects.create_user(username="oidc-user")
    user_sync_from_groups(user=user, team_name="from-sign-in", is_admin=False, playground=False)
    assert Team.objects.get(name="from-sign-in").oracle_tier == Team.OracleTier.BASIC


def _grant(user, *codenames):
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))


def test_sharing_a_key_needs_its_own_permission(api_for, cast):
    _grant(cast["alice"], "add_watermarkkey")
    alice = api_for("alice")
    refused = alice.post("/api/v1/keys", {"name": "k1", "shared": True}, format="json")
    assert refused.status_code == 403 and "share" in refused.json()["detail"]
    assert alice.post("/api/v1/keys", {"name": "k2"}, format="json").status_code == 201
    _grant(cast["alice"], "share_watermarkkey")
    alice = api_for("alice")  # permissions are cached per user object
    assert (
        alice.post("/api/v1/keys", {"name": "k3", "shared": True}, format="json").status_code == 201
    )


def test_shared_keys_are_capped(cast, tokenizer_row, settings):
    settings.PROVENANCE_MAX_SHARED_KEYS = 2
    for i in range(2):
        key_create(name=f"s{i}", team=cast["acme"], tokenizer=tokenizer_row, shared=True)
    with pytest.raises(Exception, match="at most 2 active keys may be shared"):
        key_create(name="s2", team=cast["other"], tokenizer=tokenizer_row, shared=True)
    key_create(name="private", team=cast["other"], tokenizer=tokenizer_row)  # unshared: fine
