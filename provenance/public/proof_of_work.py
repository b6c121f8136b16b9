"""The proof of work of an anonymous public check: an ALTCHA challenge (the ``altcha``
library's v1 scheme: find the number n <= maxNumber with SHA-256(salt + n) = challenge).

The challenge is stateless: its salt carries its expiry and it is signed with an HMAC of a
key derived from the site's secret, so the server stores nothing until a solution comes back;
a solution is accepted once (its challenge is then held in the cache until it expires). The
caller tries about half of the challenge's largest number in hashes (in a browser, about a
second of one core at the default ``PROVENANCE_PUBLIC_POW_MAX_NUMBER``); the server checks one
hash and one HMAC.

A flood costs the flooder: the largest number grows with the share of the global anonymous
budget the last minute spent (``difficulty``): the base up to half of it, then
exponentially, to ``PROVENANCE_PUBLIC_POW_FLOOD_FACTOR`` times the base once it is spent
(``flood_factor``). Each challenge carries the number it was issued with in its signed salt,
and a solution of one issued at less than a quarter of what is issued now is refused with a
fresh challenge, so challenges stockpiled in a quiet minute do not pay for a flood.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

import altcha
from django.conf import settings
from django.core.cache import cache

from provenance.errors import ProblemError
from provenance.public.budgets import global_share_spent

TTL_S = 600  # a challenge must be solved and used within ten minutes
_USED = "public:pow:used:"
STALE = 4  # a solution of a challenge issued at a quarter of the current number: refused
_ISSUED = "n"  # the salt's parameter holding the challenge's largest number


def _hmac_key() -> str:
    return hashlib.sha256(b"provenance.public.pow:" + settings.SECRET_KEY.encode()).hexdigest()


def flood_factor(spent: float) -> float:
    """What the largest number is multiplied by when ``spent`` (0 to 1) of the global
    anonymous budget was spent in the last minute: 1 up to a half, then
    ``FLOOD_FACTOR ** (2 * spent - 1)``: at 3/4, its square root; spent, the whole factor."""
    top = settings.PROVENANCE_PUBLIC_POW_FLOOD_FACTOR
    return float(top ** max(0.0, min(1.0, 2.0 * spent - 1.0)))


def difficulty() -> int:
    """The largest number of a challenge issued now."""
    base = settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER
    return max(1, round(base * flood_factor(global_share_spent())))


def challenge_create() -> dict[str, Any]:
    """A fresh challenge as the ALTCHA widget and ``altcha.solve_challenge_v1`` take it."""
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=TTL_S)
    top = difficulty()
    made = altcha.create_challenge_v1(
        altcha.ChallengeOptionsV1(
            algorithm="SHA-256",
            max_number=top,
            hmac_key=_hmac_key(),
            expires=expires,
            params={_ISSUED: str(top)},
        )
    )
    return made.to_dict()


class ProofOfWorkRequired(ProblemError):
    """No proof of work, or one that does not hold: the answer carries a fresh challenge."""

    status_code = 403
    default_code = "proof_of_work_required"


def solution_accept(encoded: Any) -> None:
    """Accept a base64 ALTCHA payload once (ProofOfWorkRequired otherwise)."""
    if not isinstance(encoded, str) or not encoded or len(encoded) > 2000:
        raise ProofOfWorkRequired("solve the proof-of-work challenge first")
    ok, _ = altcha.verify_solution_v1(encoded, _hmac_key(), check_expires=True)
    if not ok:
        raise ProofOfWorkRequired("the proof of work does not hold (wrong or expired)")
    payload = altcha.PayloadV1.from_base64(encoded)
    if _issued(payload) * STALE < difficulty():
        raise ProofOfWorkRequired("the proof of work was issued before the load rose; solve anew")
    signature = payload.signature
    if not cache.add(_USED + signature, 1, TTL_S):  # atomic: SET NX on Redis
        raise ProofOfWorkRequired("this proof of work was already used")


def _issued(payload: Any) -> int:
    """The largest number a verified challenge was issued with (its signed salt); the base
    for one issued without it."""
    _, _, params = payload.parse_salt()
    try:
        return int(params.get(_ISSUED, [""])[0])
    except ValueError:
        return int(settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER)
