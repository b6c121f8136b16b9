"""One identity for every caller, behind the deployment's proxies too.

Before, the public budgets and DRF's throttles read the address the trusted proxies appended,
while django-axes and the spray counters read ``REMOTE_ADDR``: behind the Kubernetes ingress
(``PROVENANCE_TRUSTED_PROXIES=1``) that is the ingress itself, so 20 failed sign-ins from
anyone locked every password sign-in, an administrator's included, for 15 minutes; and five
wrong passwords for ``root`` locked ``root`` out from everywhere. Here each is tried through
the proxy as deployed: the client's hop appended by the proxy, the connection the proxy's, and
the client writing an X-Forwarded-For of its own that must change nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from django.test import RequestFactory

from provenance.lib.identity import ACCESS_LOG_FORMAT, ENVIRON_KEY
from provenance.public.budgets import address_scope, requester

pytestmark = pytest.mark.django_db

# The deployments' shapes: the connection comes from the deployment's proxy, which appends
# the client's address to whatever X-Forwarded-For the client sent.
SHAPES = {
    # deploy/kubernetes: an ingress controller's pod in front (the base sets
    # DJANGO_BEHIND_TLS_PROXY=1 and PROVENANCE_TRUSTED_PROXIES=1).
    "kubernetes-ingress": "10.244.1.7",
    # docker-compose.yml: the operator's TLS proxy in front of the published port
    # (DJANGO_BEHIND_TLS_PROXY=1); through Docker's userland proxy, the bridge's gateway.
    "compose-tls-proxy": "172.18.0.1",
}
ATTACKER, ADMIN, BOB = "203.0.113.66", "192.0.2.10", "198.51.100.7"


@pytest.fixture(params=sorted(SHAPES))
def behind_proxy(request, settings, client) -> Any:
    """post(path, data, client_address, forged=None): a sign-in through the deployment's one
    proxy, as it reaches the web: REMOTE_ADDR the proxy, X-Forwarded-For the client's own
    header (``forged``) with the client's real address appended."""
    settings.PROVENANCE_TRUSTED_PROXIES = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = SHAPES[request.param]

    def post(path: str, data: dict[str, str], address: str, forged: str | None = None) -> Any:
        forwarded = f"{forged}, {address}" if forged else address
        return client.post(path, data, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=forwarded)

    return post


def test_a_spray_behind_the_proxy_locks_the_sprayer_not_everyone(behind_proxy, cast, settings):
    settings.PROVENANCE_LOGIN_ADDRESS_FAILURES = 8
    answers = [
        behind_proxy(
            "/accounts/login/",
            {"username": f"user-{i}", "password": "Spring2026!"},
            ATTACKER,
            forged=f"198.51.100.{i + 20}",  # a fresh address of its own each time: ignored
        ).status_code
        for i in range(10)
    ]
    assert answers == [200] * 8 + [429] * 2
    bob = behind_proxy("/accounts/login/", {"username": "bob", "password": "bob-pass-123"}, BOB)
    assert bob.status_code == 302  # everyone else still signs in


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_guessing_an_admins_password_behind_the_proxy_locks_only_the_guesser(
    behind_proxy, cast, settings, url
):
    from django.contrib.auth.models import User

    User.objects.create_superuser("root", "root@x.org", "root-pass-123")
    guesses = [
        behind_proxy(url, {"username": "root", "password": f"guess-{i}"}, ATTACKER).status_code
        for i in range(settings.AXES_FAILURE_LIMIT)
    ]
    assert guesses[-1] == 429  # the pair (root, the guesser) is locked
    again = behind_proxy(url, {"username": "root", "password": "root-pass-123"}, ATTACKER, ADMIN)
    assert again.status_code == 429  # naming the admin's address in its own header: no way out
    admin = behind_proxy(url, {"username": "root", "password": "root-pass-123"}, ADMIN)
    assert admin.status_code == 302


def test_without_trusted_proxies_a_forged_forwarded_for_changes_nothing(client, cast, settings):
    settings.PROVENANCE_LOGIN_ADDRESS_FAILURES = 8
    answers = [
        client.post(
            "/accounts/login/",
            {"username": f"user-{i}", "password": "Spring2026!"},
            HTTP_X_FORWARDED_FOR=f"198.51.100.{i + 20}",
        ).status_code
        for i in range(10)
    ]
    assert answers == [200] * 8 + [429] * 2


def test_every_counter_names_the_same_caller(settings):
    """The public budgets and guard (``requester``), DRF's throttles, axes and the spray
    counters resolve one request to one identity, whatever the client forged."""
    from axes.helpers import get_client_ip_address

    from provenance.accounts.backends import _counts
    from provenance.throttling import UserThrottle

    settings.PROVENANCE_TRUSTED_PROXIES = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}

    def request(forwarded: str) -> Any:
        return RequestFactory().post(
            "/accounts/login/", REMOTE_ADDR="10.244.1.7", HTTP_X_FORWARDED_FOR=forwarded
        )

    one = request("1.1.1.1, 2001:db8:5:6::1")
    two = request("9.9.9.9, 2001:db8:5:6:ffff::2")  # the same /64, another forged hop
    other = request("2001:db8:5:7::1")
    assert UserThrottle().get_ident(one) == UserThrottle().get_ident(two)
    assert get_client_ip_address(one) == get_client_ip_address(two) == "2001:db8:5:6::"
    assert _counts(one, "x")[0][0] == _counts(two, "x")[0][0]
    assert UserThrottle().get_ident(one) != UserThrottle().get_ident(other)
    assert _counts(one, "x")[0][0] != _counts(other, "x")[0][0]


def test_6to4_teredo_and_mapped_addresses_are_their_ipv4_host():
    host = "192.0.2.7"
    carried = [
        "::ffff:192.0.2.7",
        "2002:c000:207::1",  # 6to4: the host's /48 of 2002::/16
        "2002:c000:207:ffff:1234::9",
        "2001:0:4136:e378:8000:63bf:3fff:fdf8",  # Teredo, the client 192.0.2.7 obfuscated
    ]
    assert {address_scope(a) for a in carried} == {host}
    assert len({requester(a) for a in [host, *carried]}) == 1
    assert address_scope("2002:c000:208::1") == "192.0.2.8"


def _settings_under(**env: str) -> str:
    code = "import provenance.settings as s; print(s.PROVENANCE_TRUSTED_PROXIES)"
    clean = {k: v for k, v in os.environ.items() if k != "PROVENANCE_TRUSTED_PROXIES"}
    done = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True
    )
    return done.stdout.strip() or done.stderr


def test_behind_a_tls_proxy_one_trusted_proxy_is_the_default():
    """The compose deployment behind the operator's TLS proxy (DJANGO_BEHIND_TLS_PROXY=1)
    counts the client the proxy appended, not the proxy; an explicit value still wins."""
    assert _settings_under(DJANGO_BEHIND_TLS_PROXY="1") == "1"
    assert _settings_under(DJANGO_BEHIND_TLS_PROXY="0") == "0"
    assert _settings_under(DJANGO_BEHIND_TLS_PROXY="1", PROVENANCE_TRUSTED_PROXIES="2") == "2"


def test_the_access_log_names_the_client_not_the_proxy(behind_proxy, cast):
    """Gunicorn's access log prints the WSGI environ's ``provenance.client`` (set for every
    request) where its default format printed REMOTE_ADDR, the proxy."""
    answer = behind_proxy("/accounts/login/", {"username": "x", "password": "y"}, BOB, ADMIN)
    assert answer.wsgi_request.META[ENVIRON_KEY] == BOB


def test_every_way_the_web_is_started_logs_the_client():
    import shlex
    from pathlib import Path

    import yaml

    from provenance.runner.embedded import _web_args

    root = Path(__file__).resolve().parents[3]
    compose = yaml.safe_load((root / "docker-compose.yml").read_text())
    started = shlex.split(shlex.split(compose["services"]["web"]["command"])[2])
    kube = [
        doc
        for doc in yaml.safe_load_all((root / "deploy/kubernetes/base/web.yaml").read_text())
        if doc and doc.get("kind") == "Deployment"
    ]
    (container,) = kube[0]["spec"]["template"]["spec"]["containers"]
    runner = _web_args("127.0.0.1", 8000)
    assert started[started.index("--access-logformat") + 1] == ACCESS_LOG_FORMAT
    assert f"--access-logformat={ACCESS_LOG_FORMAT}" in container["command"]
    assert runner[runner.index("--access-logformat") + 1] == ACCESS_LOG_FORMAT
    assert "%(h)s" not in ACCESS_LOG_FORMAT and f"{{{ENVIRON_KEY}}}e" in ACCESS_LOG_FORMAT
