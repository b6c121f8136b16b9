"""The access matrix: every API route and page, for anonymous, charlie (another team), bob
(alice's team), alice (owner) and staff (an administrator on no team). Objects of another
team do not exist for the caller (404, never 403), and their ids are random UUIDs."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import uuid

import pytest
from django.contrib.auth.models import Permission
from knox.models import AuthToken
from rest_framework.test import APIClient

from detector.reports.signed import verify
from provenance.accounts.services import user_create
from provenance.audits.models import Audit
from provenance.audits.services import audit_submit
from provenance.checks.services import check_create, check_score
from provenance.playground.models import Conversation, Message
from provenance.streams.services import stream_create

pytestmark = pytest.mark.django_db

ACTORS = ["anonymous", "charlie", "bob", "alice", "staff"]


@pytest.fixture
def world(cast, alice_key, human_text):
    """alice's objects, and the cast with the playground granted (ownership must decide)."""
    staff = user_create(username="staff", password="x", is_staff=True, is_superuser=True)
    perm = Permission.objects.get(codename="use_playground")
    for name in ("alice", "bob", "charlie"):
        cast[name].user_permissions.add(perm)
    conversation = Conversation.objects.create(team=cast["acme"], user=cast["alice"])
    reply = Message.objects.create(
        conversation=conversation, role="assistant", content="A reply.", key=alice_key
    )
    audit, _ = audit_submit(user=cast["alice"], texts=[{"client_id": "a", "text": human_text}])
    check = check_create(user=cast["alice"], text=human_text)
    check_score(check.id)  # finished: it has a signed report
    stream, _ = stream_create(user=cast["alice"])
    return {
        **cast,
        "staff": staff,
        "ids": {
            "check": check.id,
            "stream": stream.id,
            "audit": audit.id,
            "key": alice_key.id,
            "conversation": conversation.id,
            "message": reply.id,
        },
    }


def _api(world, actor: str) -> APIClient:
    client = APIClient()
    if actor != "anonymous":
        _, token = AuthToken.objects.create(user=world[actor])
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def _page(world, actor: str, client):
    if actor != "anonymous":
        client.force_login(world[actor])
    return client


# (method, url, body, expected status per actor in ACTORS order)
OWNED = (401, 404, 200, 200, 404)  # team objects: alice's team sees them, others get 404
LISTED = (401, 200, 200, 200, 200)  # team-scoped lists: everyone signed in, own rows only
API_ROUTES = [
    ("get", "/api/v1/checks", None, LISTED),
    ("get", "/api/v1/checks/{check}", None, OWNED),
    ("get", "/api/v1/checks/{check}/report", None, OWNED),
    ("get", "/.well-known/jwks.json", None, (200, 200, 200, 200, 200)),  # public keys
    ("get", "/api/v1/audits", None, LISTED),
    ("get", "/api/v1/audits/{audit}", None, OWNED),
    ("get", "/api/v1/audits/{audit}/items", None, OWNED),
    ("get", "/api/v1/audits/{audit}/export.csv", None, OWNED),
    ("get", "/api/v1/audits/{audit}/export.json", None, OWNED),
    ("get", "/api/v1/keys", None, LISTED),
    ("get", "/api/v1/keys/{key}", None, OWNED),
    # Writes: another team's key is unknown (the same 400 as a random id); no team, 403.
    ("post", "/api/v1/checks", {"text": "t", "key_ids": ["{key}"]}, (401, 400, 202, 202, 403)),
    ("post", "/api/v1/audits", {"texts": [{"text": "t"}]}, (401, 400, 202, 202, 403)),
    ("post", "/detect", {"text": "some text"}, (401, 400, 200, 200, 403)),
    ("post", "/api/v1/streams", {}, (401, 400, 201, 201, 403)),  # charlie's team has no keys
    # A stream is its user's own (the e-process state of one caller's text).
    ("post", "/api/v1/streams/{stream}/append", {"token_ids": [1, 2]}, (401, 404, 404, 200, 404)),
    # The registry: changing keys needs the model permission, which only staff holds here.
    ("post", "/api/v1/keys", {"name": "new"}, (401, 403, 403, 403, 403)),
    ("post", "/api/v1/keys/{key}/rotate", None, (401, 403, 403, 403, 404)),
    ("post", "/api/v1/keys/{key}/retire", None, (401, 403, 403, 403, 404)),
    # The playground: a conversation is its user's own.
    ("get", "/api/v1/playground/replies/{message}", None, (401, 404, 404, 200, 404)),
    ("get", "/api/schema/", None, (401, 200, 200, 200, 200)),
    # Public verification: open to all; a check without a proof of work gets no verdict,
    # whoever asks (a team's token is no partner key).
    ("get", "/.well-known/provenance.json", None, (200, 200, 200, 200, 200)),
    ("get", "/api/public/v1/challenge", None, (200, 200, 200, 200, 200)),
    ("post", "/api/public/v1/verify", {"text": "some text"}, (403, 403, 403, 403, 403)),
    # Deleting (last: it hides the objects): the submitter or a team admin; bob is neither.
    ("delete", "/api/v1/checks/{check}", None, (401, 404, 403, 204, 404)),
    ("delete", "/api/v1/audits/{audit}", None, (401, 404, 403, 204, 404)),
    # Revoking the caller's own token (the very last: every later request would be a 401).
    ("post", "/api/v1/token/revoke-all", None, (401, 204, 204, 204, 204)),
    ("post", "/api/v1/token/revoke", None, (401, 401, 401, 401, 401)),
]
LOGIN = 302
PAGES = [
    ("/", (LOGIN, 200, 200, 200, 200)),
    ("/checks/", (LOGIN, 200, 200, 200, 200)),
    ("/checks/{check}/", (LOGIN, 404, 200, 200, 404)),
    ("/checks/{check}/delete/", (LOGIN, 404, 403, 200, 404)),
    ("/checks/{check}/report/", (LOGIN, 404, 200, 200, 404)),
    ("/audits/", (LOGIN, 200, 200, 200, 200)),
    ("/audits/{audit}/", (LOGIN, 404, 200, 200, 404)),
    ("/keys/", (LOGIN, 200, 200, 200, 200)),
    ("/accounts/token/", (LOGIN, 200, 200, 200, 200)),
    ("/api/docs/", (401, 200, 200, 200, 200)),
    ("/playground/", (LOGIN, 200, 200, 200, 200)),
    ("/verify/", (200, 200, 200, 200, 200)),
    ("/playground/c/{conversation}/", (LOGIN, 404, 404, 200, 404)),
    ("/playground/m/{message}/edit", (LOGIN, 404, 404, 200, 404)),
    ("/admin/", (LOGIN, LOGIN, LOGIN, LOGIN, 200)),
    ("/admin/checks/check/{check}/change/", (LOGIN, LOGIN, LOGIN, LOGIN, 200)),
    ("/admin/usage/detectionlog/", (LOGIN, LOGIN, LOGIN, LOGIN, 200)),
]


# Forms (POST), with what each actor gets; the playground's generator is down here, so a
# reply alice may start answers 200 and streams an error event.
PAGE_POSTS = [
    ("/", {"text": "some text"}, (LOGIN, 400, 302, 302, 403)),
    ("/accounts/token/", {}, (LOGIN, 200, 200, 200, 200)),
    ("/playground/m/{message}/check", {}, (LOGIN, 404, 404, 302, 404)),
    (
        "/playground/c/{conversation}/reply",
        {"content": "hi", "key": "{key}", "temperature": "1", "top_p": "1", "max_tokens": "8"},
        (LOGIN, 404, 404, 200, 404),
    ),
    ("/admin/keys/watermarkkey/{key}/change/", {}, (LOGIN, LOGIN, LOGIN, LOGIN, 200)),
    ("/checks/{check}/delete/", {}, (LOGIN, 404, 403, 302, 404)),
]


def _fill(template, ids):
    if isinstance(template, str):
        return template.format(**{name: str(value) for name, value in ids.items()})
    if isinstance(template, list):
        return [_fill(item, ids) for item in template]
    if isinstance(template, dict):
        return {key: _fill(value, ids) for key, value in template.items()}
    return template


@pytest.mark.parametrize("actor", ACTORS)
def test_every_api_route_answers_each_actor_as_the_matrix_says(world, actor):
    client, ids, got = _api(world, actor), world["ids"], []
    for method, url, body, expected in API_ROUTES:
        response = getattr(client, method)(_fill(url, ids), _fill(body, ids), format="json")
        got.append((method, url, response.status_code, expected[ACTORS.index(actor)]))
    assert [g for g in got if g[2] != g[3]] == []


@pytest.mark.parametrize("actor", ACTORS)
def test_every_page_answers_each_actor_as_the_matrix_says(world, actor, client):
    client, ids, got = _page(world, actor, client), world["ids"], []
    for url, expected in PAGES:
        response = client.get(_fill(url, ids))
        got.append((url, response.status_code, expected[ACTORS.index(actor)]))
    assert [g for g in got if g[1] != g[2]] == []


@pytest.mark.parametrize("actor", ["charlie", "staff"])
def test_lists_show_nothing_of_another_team(world, actor, client):
    api, ids = _api(world, actor), {k: str(v) for k, v in world["ids"].items()}
    bodies = [
        api.get(url).content.decode()
        for url in ("/api/v1/checks", "/api/v1/audits", "/api/v1/keys")
    ]
    client = _page(world, actor, client)
    bodies += [client.get(url).content.decode() for url in ("/checks/", "/audits/", "/keys/")]
    for body in bodies:
        assert not any(value in body for value in ids.values())


def test_the_public_routes_show_no_team_data_and_no_key(world, client, wm_text, settings):
    from provenance.keys.models import WatermarkKey
    from provenance.keys.services import key_publish
    from provenance.lib.crypto import decrypt_value
    from tests.provenance.public.conftest import solve

    settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER = 1000
    key = WatermarkKey.objects.get(pk=world["ids"]["key"])
    key_publish(key=key, public_name="Acme Assistant")
    anon = APIClient()
    proof = solve(anon.get("/api/public/v1/challenge").json())
    verdict = anon.post(
        "/api/public/v1/verify", {"text": wm_text}, format="json", HTTP_X_PROVENANCE_POW=proof
    )
    assert verdict.json()["verdict"] == "watermarked"
    bodies = [
        verdict.content.decode(),
        anon.get("/.well-known/provenance.json").content.decode(),
        client.get("/verify/").content.decode(),
    ]
    private = [str(v) for v in world["ids"].values()]
    private += ["acme-main", '"acme"', str(decrypt_value(key.encrypted_value))]
    for body in bodies:
        assert "Acme Assistant" in body or "receipt" in body
        assert not [value for value in private if value in body]


def test_another_teams_object_and_a_random_id_answer_alike(world):
    charlie = _api(world, "charlie")
    theirs = charlie.get(f"/api/v1/checks/{world['ids']['check']}")
    nobody = charlie.get(f"/api/v1/checks/{uuid.uuid4()}")
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.json() == nobody.json()
    malformed = charlie.get("/api/v1/keys/12")
    assert malformed.status_code == 404


def test_ids_in_urls_and_answers_are_random_uuids(world):
    alice = _api(world, "alice")
    body = alice.post("/api/v1/checks", {"text": "another text"}, format="json").json()
    for value in (body["id"], *[str(v) for v in world["ids"].values()]):
        assert uuid.UUID(value).version == 4
    assert alice.get("/api/v1/checks/1").status_code == 404  # no sequential ids to walk


@pytest.mark.parametrize("actor", ACTORS)
def test_every_form_answers_each_actor_as_the_matrix_says(world, actor, client, settings):
    from provenance.runner.redis_server import free_port

    settings.PROVENANCE_PLAYGROUND = {
        **settings.PROVENANCE_PLAYGROUND,
        "GENERATOR_URL": f"http://127.0.0.1:{free_port()}",
    }
    client, ids, got = _page(world, actor, client), world["ids"], []
    for url, form, expected in PAGE_POSTS:
        response = client.post(_fill(url, ids), _fill(form, ids))
        if response.streaming:
            b"".join(response.streaming_content)  # let the stream finish and store its reply
        got.append((url, response.status_code, expected[ACTORS.index(actor)]))
    assert [g for g in got if g[1] != g[2]] == []


# --- oracle tiers: what each answer reveals to an auditor and to a basic team -----------------

TIERED_ROUTES = [
    ("get", "/api/v1/checks/{check}?tokens=1", None),
    ("get", "/api/v1/checks", None),
    ("get", "/api/v1/audits/{audit}/items", None),
    ("get", "/api/v1/audits/{audit}/export.json", None),
    ("post", "/detect", {"text": "Some text to test against the team's keys."}),
    ("post", "/api/v1/streams/{stream}/append", {"token_ids": [5, 6, 7, 8, 9, 10]}),
]


def _numbers(value, found):
    """(key, number) pairs under the p-value and score fields, any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in (
                "log10_p",
                "adjusted_log10_p",
                "log10_p_anytime",
                "log10_e_value",
                "score",
                "p_value",
            ):
                found.append((key, item))
            _numbers(item, found)
    elif isinstance(value, list):
        for item in value:
            _numbers(item, found)
    return found


def _tiered_answers(world, tier):
    from provenance.audits.services import audit_score_chunk

    world["acme"].oracle_tier = tier
    world["acme"].save()
    audit = world["ids"]["audit"]
    audit_score_chunk(audit, [c.id for c in Audit.objects.get(id=audit).checks.all()])
    client, answers = _api(world, "alice"), {}
    for method, url, body in TIERED_ROUTES:
        response = getattr(client, method)(_fill(url, world["ids"]), body, format="json")
        assert response.status_code == 200, (url, response.content)
        answers[url] = (
            json.loads(b"".join(response.streaming_content))
            if response.streaming
            else response.json()
        )
    report = client.get(_fill("/api/v1/checks/{check}/report", world["ids"])).content.decode()
    answers["report"] = verify(report, client.get("/.well-known/jwks.json").json()).payload
    return answers


def test_a_basic_team_gets_no_exact_p_value_and_no_per_token_data_anywhere(world, client):
    for url, answer in _tiered_answers(world, "basic").items():
        numbers = _numbers(answer, [])
        assert numbers, url
        for key, value in numbers:
            if key == "score":
                assert value is None, (url, key)
            elif key == "p_value" and value:
                assert math.log10(value) == pytest.approx(round(math.log10(value))), (url, key)
            elif value is not None:
                assert value == int(value), (url, key, value)
        assert "heatmap" not in json.dumps(answer), url
    page = _page(world, "alice", client).get(_fill("/checks/{check}/", world["ids"])).content
    assert b'id="heatmap"' not in page and b'id="evidence-chart"' not in page


def test_an_auditor_team_gets_exact_values_and_the_heatmap(world, client):
    answers = _tiered_answers(world, "auditor")
    exact = [
        url
        for url, answer in answers.items()
        if any(v is not None and v != int(v) for k, v in _numbers(answer, []) if k != "p_value")
    ]
    assert set(exact) == set(answers)
    assert "heatmap" in answers["/api/v1/checks/{check}?tokens=1"]
    page = _page(world, "alice", client).get(_fill("/checks/{check}/", world["ids"])).content
    assert b'id="heatmap"' in page


def _csv_rows(response) -> list[dict[str, str]]:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return list(csv.DictReader(io.StringIO(body.decode())))


def test_a_basic_team_gets_rounded_values_in_the_csv_exports(world):
    answers = _tiered_answers(world, "basic")  # scores the audit, sets the tier
    assert answers
    client = _api(world, "alice")
    for url in ("/api/v1/checks/{check}/export.csv", "/api/v1/audits/{audit}/export.csv"):
        rows = _csv_rows(client.get(_fill(url, world["ids"])))
        assert rows, url
        for row in rows:
            for column, value in row.items():
                if column.endswith("log10_p") and value:
                    assert float(value) == int(float(value)), (url, column, value)
                elif column.endswith("p_value") and value and float(value) > 0:
                    log10 = math.log10(float(value))
                    assert log10 == pytest.approx(round(log10)), (url, column, value)
                elif column == "score":
                    assert value == "", (url, column, value)


def _span_p_values(page: bytes) -> list[str]:
    lines = re.findall(r'<li class="span-line">(.*?)</li>', page.decode())
    assert lines  # the watermarked text has a localized span
    return [re.search(r"p = ([^ ]+)", line).group(1) for line in lines]


def test_the_page_states_a_spans_p_rounded_down_for_a_basic_team(world, wm_text, client):
    from provenance.checks.models import Check
    from provenance.checks.templatetags.provenance_tags import pvalue

    check = check_create(user=world["alice"], text=wm_text)
    check_score(check.id)
    spans = Check.objects.get(id=check.id).spans
    url = f"/checks/{check.id}/"
    _page(world, "alice", client)
    exact = [pvalue(s["log10_p"]) for s in spans]
    assert _span_p_values(client.get(url).content) == exact
    world["acme"].oracle_tier = "basic"
    world["acme"].save()
    rounded = [pvalue(math.floor(s["log10_p"])) for s in spans]
    assert rounded != exact
    assert _span_p_values(client.get(url).content) == rounded


def test_a_reply_stored_under_the_auditor_tier_is_rounded_for_a_basic_team(world, client):
    Message.objects.filter(id=world["ids"]["message"]).update(log10_p=-12.345)
    api, url = _api(world, "alice"), _fill("/api/v1/playground/replies/{message}", world["ids"])
    page_url = _fill("/playground/c/{conversation}/", world["ids"])
    _page(world, "alice", client)
    assert api.get(url).json()["log10_p"] == -12.345
    assert b"log10 p = -12.3" in client.get(page_url).content
    world["acme"].oracle_tier = "basic"
    world["acme"].save()
    assert api.get(url).json()["log10_p"] == -13.0
    page = client.get(page_url).content
    assert b"log10 p = -13.0" in page and b"-12.3" not in page
