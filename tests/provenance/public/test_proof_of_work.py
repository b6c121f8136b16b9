"""The proof of work: solvable, checked in microseconds, once, and never forged."""

from __future__ import annotations

import base64
import json
import time

import pytest

from provenance.public.proof_of_work import ProofOfWorkRequired, challenge_create, solution_accept
from tests.provenance.public.conftest import solve


def test_a_solved_challenge_is_accepted_once(settings):
    proof = solve(challenge_create())
    solution_accept(proof)
    with pytest.raises(ProofOfWorkRequired, match="already used"):
        solution_accept(proof)


def test_checking_a_solution_costs_the_server_far_less_than_solving(settings):
    proofs = [solve(challenge_create()) for _ in range(20)]
    start = time.perf_counter()
    for proof in proofs:
        solution_accept(proof)
    assert (time.perf_counter() - start) / len(proofs) < 0.01  # microseconds, with slack


@pytest.mark.parametrize("proof", [None, "", "not base64!", 42, "x" * 3000])
def test_a_missing_or_malformed_proof_is_refused(proof):
    with pytest.raises(ProofOfWorkRequired):
        solution_accept(proof)


def test_a_challenge_signed_with_another_secret_is_refused(settings):
    challenge = challenge_create()
    settings.SECRET_KEY = "another-secret-" + "x" * 40
    with pytest.raises(ProofOfWorkRequired, match="does not hold"):
        solution_accept(solve(challenge))


def test_a_changed_number_is_refused():
    payload = json.loads(base64.b64decode(solve(challenge_create())))
    payload["number"] += 1
    with pytest.raises(ProofOfWorkRequired):
        solution_accept(base64.b64encode(json.dumps(payload).encode()).decode())


def test_the_challenge_costs_what_the_setting_says(settings):
    settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER = 1234
    assert challenge_create()["maxNumber"] == 1234


def test_a_solution_is_used_once_across_processes_sharing_redis(redis_server, monkeypatch):
    from provenance.cache import FailoverRedisCache
    from provenance.public import proof_of_work

    first, second = (FailoverRedisCache(redis_server.url, {}) for _ in range(2))
    proof = solve(challenge_create())
    monkeypatch.setattr(proof_of_work, "cache", first)
    solution_accept(proof)
    monkeypatch.setattr(proof_of_work, "cache", second)
    with pytest.raises(ProofOfWorkRequired, match="already used"):
        solution_accept(proof)
