"""schemathesis over the OpenAPI schema against a live server (a separate process drives
it): bounded examples, every operation, positive and negative data (wrong types, missing and
undeclared fields), not one 5xx answer, every undeclared field refused with 400 naming it and
every accepted JSON body refused once a key is repeated (tests/provenance/schemathesis_hooks.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from knox.models import AuthToken

from provenance.accounts.services import user_create
from tests.provenance import capture
from tests.provenance.conftest import point_celery_at

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
MAX_EXAMPLES = 10  # per operation: the whole run stays around a minute on two cores
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
CHECKS = "not_a_server_error,undeclared_fields_refused,duplicate_keys_refused"
REVOKING = r"^/api/v1/token/"  # the token revocation routes


def _schemathesis() -> list[str]:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "schemathesis.cli"]


def test_no_generated_request_gets_a_5xx(
    live_server, redis_server, cast, alice_key, tmp_path, monkeypatch
):
    from rest_framework.throttling import UserRateThrottle

    point_celery_at(redis_server.url)  # checks are queued for real (and scored if a worker runs)
    # Rate limits have their own test; here they would hide the operations behind 429s.
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": None, "detect": None})
    # The public check's proof of work and budgets (their own tests) would answer every
    # generated request 403 or 429; the live server runs in this process, so they are lifted.
    from provenance.keys.services import key_publish
    from provenance.public import budgets, proof_of_work

    key_publish(key=alice_key, public_name="Acme Assistant")  # none published would be 503
    monkeypatch.setattr(proof_of_work, "solution_accept", lambda proof: None)
    monkeypatch.setattr(budgets, "anonymous_spend", lambda address: None)
    monkeypatch.setattr(budgets, "anonymous_shared_spend", lambda address: None)
    # A superuser on alice's team: the key registry and the playground are exercised too.
    root = user_create(
        username="root",
        password="root-pass-123",
        is_superuser=True,
        is_staff=True,
        team=cast["acme"],
    )
    _, token = AuthToken.objects.create(user=root)
    tally = tmp_path / "tally.txt"
    tally.touch()
    done = subprocess.run(
        [
            *_schemathesis(),
            "run",
            f"{live_server.url}/api/schema/",
            "--header",
            f"Authorization: Token {token}",
            # Revoking the run's own token would leave every later request a 401; those
            # routes have their tests (tests/provenance/accounts/test_api.py).
            "--exclude-path-regex",
            REVOKING,
            "--checks",
            CHECKS,
            "--mode",
            "all",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            "7",
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--max-failures",
            "5",
            "--phases",
            "examples,coverage,fuzzing",
            "--no-color",
            "--generation-database",
            "none",
            "--report",
            "junit",
            "--report-dir",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env={
            **os.environ,
            "SCHEMATHESIS_HOOKS": str(HOOKS),
            "PROVENANCE_SCHEMATHESIS_TALLY": str(tally),
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    capture.record("schemathesis", done.stdout + done.stderr)
    summary = done.stdout[-4000:] + done.stderr[-2000:]
    suite = ElementTree.parse(next(tmp_path.glob("*.xml"))).getroot()
    operations = _operations(live_server.url, token)
    assert operations >= 21 and suite.get("tests") == str(operations), summary  # all exercised
    # A failure is a 5xx answer, an undeclared field not refused, or a repeated key accepted.
    failed = [(f.get("message") or "") + (f.text or "")[:600] for f in suite.iter("failure")]
    assert suite.get("failures") == "0", "\n".join(failed)[:8000] + summary
    # An error is a request that got no answer at all. The test server's own HTTP parser
    # (Python's http.server, under Django's live server) drops some generated requests, such
    # as an over-long header line, before the app sees them: that is no 5xx. Anything else is.
    for error in suite.iter("error"):
        assert "Connection" in (error.get("message", "") + (error.text or "")), summary
    assert done.returncode == 0 or suite.get("errors") != "0", summary
    assert "Authentication failed" not in done.stdout and "Rate limited" not in done.stdout
    # The added checks ran: bodies with undeclared fields on most operations that take one,
    # and a repeated key on the JSON bodies of every operation that takes one.
    checked = [line.split() for line in tally.read_text().splitlines()]
    bodies = _operations_with_a_body(live_server.url, token)
    undeclared = {(method, path) for check, method, path, _ in checked if check == "undeclared"}
    repeated = {(method, path) for check, method, path, _ in checked if check == "duplicate"}
    assert len(undeclared) >= len(bodies) - 2, (sorted(undeclared), sorted(bodies))
    assert len(repeated) >= len(bodies) - 2, (sorted(repeated), sorted(bodies))


def _operations_with_a_body(base: str, token: str) -> set[tuple[str, str]]:
    import httpx

    schema = httpx.get(
        f"{base}/api/schema/?format=json", headers={"Authorization": f"Token {token}"}
    ).json()
    return {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "requestBody" in operation
    }


def _operations(base: str, token: str) -> int:
    """How many operations the OpenAPI schema lists (each gets its own test case)."""
    import httpx

    schema = httpx.get(
        f"{base}/api/schema/?format=json", headers={"Authorization": f"Token {token}"}
    ).json()
    methods = {"get", "put", "post", "delete", "patch"}
    return sum(
        len(methods & set(item))
        for path, item in schema["paths"].items()
        if not re.match(REVOKING, path)
    )
