"""The public budgets hold across processes: two gunicorn servers on two ports, each its own
process and memory, over the test database and one real Redis, with checks sent to them in
turn. Counted in each process alone, the two would accept twice the budget."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from provenance.keys.services import key_publish
from provenance.public.models import PartnerUsage
from provenance.public.services import partner_create
from provenance.runner.processes import stop_process
from provenance.runner.redis_server import free_port
from tests.provenance.conftest import REPO, worker_env
from tests.provenance.public.conftest import PUBLIC_NAME, solve
from tests.provenance.watermark import HUMAN_TEXT
from tests.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ADDRESS_BUDGET = 4  # anonymous checks a minute per address, in both servers
PARTNER_BUDGET = 5  # the test partner's own
CHECKS = 12  # sent in each test, alternately to the two servers


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/.well-known/provenance.json", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def servers(django_db_setup, redis_server, tmp_path_factory) -> Iterator[list[str]]:
    """Two gunicorn servers (one worker each) on the test database, counting in one Redis."""
    env = worker_env(
        redis_server.url,
        PROVENANCE_CACHE_URL=redis_server.url,
        PROVENANCE_PUBLIC_ADDRESS_PER_MIN=str(ADDRESS_BUDGET),
        PROVENANCE_PUBLIC_POW_MAX_NUMBER="2000",
        PROVENANCE_PUBLIC_PEERS="",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
    )
    root = tmp_path_factory.mktemp("budget-servers")
    started: list[tuple[subprocess.Popen[bytes], str, Path]] = []
    try:
        for i in range(2):
            port, log = free_port(), root / f"web{i}.log"
            args = [sys.executable, "-m", "gunicorn", "provenance.wsgi:application"]
            args += ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "4"]
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [*args, "--no-control-socket", "--timeout", "120"],
                    cwd=REPO,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            started.append((process, f"http://127.0.0.1:{port}", log))
        for process, url, log in started:
            wait_until(
                lambda url=url: _answers(url),
                120,
                0.2,
                alive=lambda process=process: process.poll() is None,
                what=lambda log=log: log.read_text(errors="replace")[-3000:],
            )
        assert len({p.pid for p, _, _ in started}) == 2
        yield [url for _, url, _ in started]
    finally:
        for process, _, _ in started:
            stop_process(process, 20)


@pytest.fixture
def fresh_budgets(redis_server) -> None:
    """No count left from an earlier test in the shared Redis (only the budgets' keys)."""
    client = redis.Redis.from_url(redis_server.url)
    for key in client.scan_iter(match="*public:budget:*"):
        client.delete(key)
    client.close()


def _refusals_hold(answers: list[httpx.Response]) -> None:
    for refused in answers:
        assert refused.json()["code"] == "throttled"
        assert 1 <= int(refused.headers["Retry-After"]) <= 60


def _accepted_by_each(servers: list[str], codes: list[int]) -> list[int]:
    return [sum(c == 200 for c in codes[i :: len(servers)]) for i in range(len(servers))]


def test_a_partner_budget_holds_across_two_servers(servers, alice_key, fresh_budgets):
    key_publish(key=alice_key, public_name=PUBLIC_NAME)
    partner, secret = partner_create(name="newsroom", per_minute=PARTNER_BUDGET)
    answers = []
    for i in range(CHECKS):
        with httpx.Client(base_url=servers[i % 2], timeout=60) as client:
            answers.append(
                client.post(
                    "/api/public/v1/verify",
                    json={"text": f"{HUMAN_TEXT} (partner check {i})"},
                    headers={"Authorization": f"Bearer {secret}"},
                )
            )
    codes = [a.status_code for a in answers]
    assert codes == [200] * PARTNER_BUDGET + [429] * (CHECKS - PARTNER_BUDGET), codes
    assert all(n >= 2 for n in _accepted_by_each(servers, codes))  # both servers answered
    assert {a.json()["model"] for a in answers[:PARTNER_BUDGET]} == {None}  # a human text
    _refusals_hold(answers[PARTNER_BUDGET:])
    logged = PartnerUsage.objects.filter(partner=partner)
    assert logged.filter(status_code=200).count() == PARTNER_BUDGET
    assert logged.filter(status_code=429).count() == CHECKS - PARTNER_BUDGET


def _anonymous(server: str, text: str, proof: str | None = None) -> tuple[httpx.Response, str]:
    with httpx.Client(base_url=server, timeout=60) as client:
        proof = proof or solve(client.get("/api/public/v1/challenge").json())
        answer = client.post(
            "/api/public/v1/verify", json={"text": text}, headers={"X-Provenance-PoW": proof}
        )
    return answer, proof


def test_an_address_budget_holds_across_two_servers(servers, alice_key, fresh_budgets):
    """Each check with a proof of work solved here against the server it goes to; a solution
    spent at one server is refused at the other and takes no place in the budget."""
    key_publish(key=alice_key, public_name=PUBLIC_NAME)
    answers: list[httpx.Response] = []
    replayed: Any = None
    for i in range(CHECKS):
        answer, proof = _anonymous(servers[i % 2], f"{HUMAN_TEXT} (anonymous check {i})")
        answers.append(answer)
        if i == 0:
            replayed, _ = _anonymous(servers[1], f"{HUMAN_TEXT} (anonymous check 0)", proof)
    assert replayed.status_code == 403
    assert replayed.json()["code"] == "proof_of_work_required"
    codes = [a.status_code for a in answers]
    assert codes == [200] * ADDRESS_BUDGET + [429] * (CHECKS - ADDRESS_BUDGET), codes
    assert all(n >= 2 for n in _accepted_by_each(servers, codes))
    _refusals_hold(answers[ADDRESS_BUDGET:])
