"""Deployment hardening and the oracle's limits: `check --deploy` clean under production
settings, CSRF on every form, a content security policy the pages satisfy, per-user rate
limits and daily quotas on detection, the audit log, and KEK rotation."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.test import Client

from provenance.audits.models import Audit
from provenance.checks.models import Check
from provenance.keys.models import WatermarkKey
from provenance.keys.services import key_create
from provenance.lib import crypto
from provenance.usage.models import DetectionLog
from tests.provenance.conftest import KEY_VALUE, REPO, TEST_KEK
from tests.provenance.test_secrets import _crawl

pytestmark = pytest.mark.django_db


def _production_env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PROVENANCE_"))}
    return {
        **env,
        "PROVENANCE_EMBEDDED": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "provenance.example.com",
        "PROVENANCE_KEK": Fernet.generate_key().decode(),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'prod.sqlite3'}",
        "PROVENANCE_DATA_DIR": str(tmp_path),
        **extra,
    }


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    done = _manage(_production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_production_settings_turn_on_https_cookies_and_hsts(tmp_path):
    probe = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, "
        "s.SECURE_HSTS_SECONDS >= 31536000, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.DEBUG)"
    )
    env = {**_production_env(tmp_path), "DJANGO_SETTINGS_MODULE": "provenance.settings"}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["True", "True", "True", "True", "True", "False"], done.stderr


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = _production_env(tmp_path)
    env.pop("DJANGO_SECRET_KEY")
    done = _manage(env, "check")
    assert done.returncode != 0 and "DJANGO_SECRET_KEY must be set" in done.stderr


def test_secure_responses_carry_hsts_and_secure_cookies(settings, cast):
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_SSL_REDIRECT = True
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    client = Client()
    assert client.get("/accounts/login/").status_code == 301  # plain HTTP goes to HTTPS
    page = client.get("/accounts/login/", secure=True)
    assert page["Strict-Transport-Security"].startswith("max-age=31536000")
    assert page.cookies["csrftoken"]["secure"] and page.cookies["csrftoken"]["httponly"]
    token = page.cookies["csrftoken"].value
    login = client.post(
        "/accounts/login/",
        {"username": "alice", "password": "alice-pass-123", "csrfmiddlewaretoken": token},
        secure=True,
    )
    assert login.status_code == 302
    assert login.cookies["sessionid"]["secure"] and login.cookies["sessionid"]["httponly"]


INLINE = [
    re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I),
    re.compile(r"<style[\s>]", re.I),
    re.compile(r"\sstyle\s*=", re.I),
    re.compile(r"\son[a-z]+\s*=", re.I),
    re.compile(r"javascript:", re.I),
]


def test_every_page_sends_a_csp_it_satisfies_and_every_form_carries_csrf(
    cast, alice_key, client, wm_text
):
    from provenance.accounts.services import membership_set, user_create

    root = user_create(username="root", password="root-pass-123", is_staff=True, is_superuser=True)
    membership_set(user=root, team=cast["acme"])
    client.force_login(root)
    client.post("/", {"text": wm_text})
    pages = _crawl(
        client,
        [
            "/",
            "/checks/",
            "/audits/",
            "/keys/",
            "/accounts/token/",
            "/playground/",
            "/admin/",
            "/api/docs/",
        ],
        limit=120,
    )
    html = {url: body for url, body in pages.items() if "<html" in body.lower()}
    assert len(html) > 30
    browsing = client.get("/api/v1/checks", HTTP_ACCEPT="text/html,*/*;q=0.8")
    assert browsing["Content-Type"] == "application/json"  # no browsable HTML to police
    policy = client.get("/")["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    for url, body in html.items():
        for pattern in INLINE:
            assert not pattern.search(body), (url, pattern.pattern)
        for form in re.findall(r"<form[^>]*method=\"post\"[^>]*>.*?</form>", body, re.I | re.S):
            assert "csrfmiddlewaretoken" in form, url


def test_a_post_without_the_csrf_token_is_refused(cast, alice_key):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast["alice"])
    assert client.post("/", {"text": "some text"}).status_code == 403
    assert client.post("/accounts/token/").status_code == 403
    assert not Check.objects.exists()


def test_detection_is_rate_limited_per_user(api_for, alice_key, monkeypatch):
    from rest_framework.throttling import UserRateThrottle

    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "100/min", "detect": "3/min"})
    alice, bob = api_for("alice"), api_for("bob")
    codes = [
        alice.post("/api/v1/checks", {"text": f"text {i}"}, format="json").status_code
        for i in range(3)
    ]
    assert codes == [202, 202, 202]
    assert alice.post("/detect", {"text": "one more"}, format="json").status_code == 429
    assert (
        alice.post("/api/v1/audits", {"texts": [{"text": "x"}]}, format="json").status_code == 429
    )
    assert alice.get("/api/v1/checks").status_code == 200  # reading results is not detecting
    assert bob.post("/detect", {"text": "bob's own"}, format="json").status_code == 200
    assert Check.objects.count() == 3


def test_the_paste_form_shares_the_detection_rate_limit(client, cast, alice_key, monkeypatch):
    from rest_framework.throttling import UserRateThrottle

    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "100/min", "detect": "2/min"})
    client.force_login(cast["alice"])
    codes = [client.post("/", {"text": f"text {i}"}).status_code for i in range(3)]
    assert codes == [302, 302, 429]
    assert Check.objects.count() == 2


def test_the_daily_quota_counts_texts_and_stores_nothing_past_it(
    api_for, alice_key, settings, client, cast
):
    settings.PROVENANCE_DAILY_QUOTA = 5
    alice = api_for("alice")
    items = [{"text": f"text {i}"} for i in range(4)]
    assert alice.post("/api/v1/audits", {"texts": items}, format="json").status_code == 202
    assert alice.post("/detect", {"text": "fifth"}, format="json").status_code == 200
    over = alice.post("/api/v1/checks", {"text": "sixth"}, format="json")
    assert over.status_code == 429 and "daily quota exceeded: 5 of 5" in over.json()["detail"]
    client.force_login(cast["alice"])
    page = client.post("/", {"text": "from the page"})
    assert page.status_code == 429 and b"daily quota" in page.content
    assert Check.objects.count() == 4 and Audit.objects.count() == 1
    assert api_for("bob").post("/detect", {"text": "bob"}, format="json").status_code == 200


def test_the_audit_log_records_who_checked_what_against_which_key(
    api_for, alice_key, cast, client, human_text
):
    import hashlib

    alice = api_for("alice")
    check = alice.post("/api/v1/checks", {"text": human_text}, format="json").json()
    alice.post("/api/v1/audits", {"texts": [{"text": "a"}, {"text": "b"}]}, format="json")
    api_for("bob").post("/detect", {"text": "bob's"}, format="json")
    logs = {log.kind: log for log in DetectionLog.objects.all()}
    assert set(logs) == {"check", "audit", "detect"}
    assert logs["check"].user == cast["alice"] and str(logs["check"].check_run_id) == check["id"]
    assert logs["check"].text_sha256 == hashlib.sha256(human_text.encode()).hexdigest()
    assert logs["check"].key_names == ["acme-main"]
    assert logs["check"].key_ids == [str(alice_key.id)]
    assert logs["audit"].num_texts == 2 and logs["detect"].username == "bob"
    client.force_login(_staff())
    listing = client.get("/admin/usage/detectionlog/").content.decode()
    assert "alice" in listing and "bob" in listing and "acme-main" in listing
    assert client.get("/admin/usage/detectionlog/add/").status_code == 403
    log_id = logs["check"].id
    assert client.post(f"/admin/usage/detectionlog/{log_id}/delete/").status_code == 403


def _staff():
    from provenance.accounts.services import user_create

    return user_create(username="auditor", password="x", is_staff=True, is_superuser=True)


def test_kek_rotation_re_encrypts_every_key(settings, cast, alice_key):
    new = Fernet.generate_key().decode()
    before = bytes(WatermarkKey.objects.get(id=alice_key.id).encrypted_value)
    settings.PROVENANCE_KEK = f"{new},{TEST_KEK}"  # the new KEK first; the old still opens
    call_command("kek_rotate")
    after = bytes(WatermarkKey.objects.get(id=alice_key.id).encrypted_value)
    assert after != before
    settings.PROVENANCE_KEK = new  # the old KEK is gone: every key still opens
    assert crypto.decrypt_value(after) == KEY_VALUE
    settings.PROVENANCE_KEK = TEST_KEK
    with pytest.raises(crypto.KeyDecryptionError):
        crypto.decrypt_value(after)


def test_kek_rotation_of_the_embedded_kek_file(settings, tmp_path, cast, tokenizer_row):
    settings.PROVENANCE_KEK, settings.DATA_DIR = "", tmp_path
    crypto._fernet.cache_clear()
    key, value = key_create(name="embedded", team=cast["acme"], tokenizer=tokenizer_row)
    old = (tmp_path / "kek.key").read_text().strip()
    call_command("kek_rotate", "--generate")
    new = (tmp_path / "kek.key").read_text().strip()
    assert (
        new != old and "," not in new and oct((tmp_path / "kek.key").stat().st_mode)[-3:] == "600"
    )
    stored = bytes(WatermarkKey.objects.get(id=key.id).encrypted_value)
    assert crypto.decrypt_value(stored) == value
    with pytest.raises(Exception):  # noqa: B017  # the old KEK no longer opens it
        Fernet(old.encode()).decrypt(stored)
    crypto._fernet.cache_clear()


def test_kek_rotation_refuses_a_key_it_cannot_open_and_changes_nothing(settings, alice_key):
    settings.PROVENANCE_KEK = Fernet.generate_key().decode()  # not the KEK the key used
    before = bytes(WatermarkKey.objects.get(id=alice_key.id).encrypted_value)
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="nothing was changed"):
        call_command("kek_rotate")
    assert bytes(WatermarkKey.objects.get(id=alice_key.id).encrypted_value) == before


def test_a_nul_in_client_id_is_refused_on_every_database(api_for, alice_key):
    # PostgreSQL refuses NUL in text columns: the product answers 400 before any write.
    # The attack suite's twin (tests/security/web/test_csv_exports.py) runs on SQLite only.
    response = api_for("alice").post(
        "/api/v1/audits", {"texts": [{"client_id": "a\x00b", "text": "t"}]}, format="json"
    )
    assert response.status_code == 400 and "NUL" in response.json()["detail"]
