"""The proof of work of an anonymous public check: an ALTCHA challenge (the ``altcha``
library's v1 scheme: find the number n <= maxNumber with SHA-256(salt + n) = challenge).

The challenge is stateless: its salt carries its expiry and it is signed with an HMAC of a
key derived from the site's secret, so the server stores nothing until a solution comes back;
a solution is accepted once (its challenge is then held in the cache until it expires). The
caller tries about half of ``PROVENANCE_PUBLIC_POW_MAX_NUMBER`` hashes (in a browser, about a
second of one core at the default); the server checks one hash and one HMAC.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

import altcha
from django.conf import settings
from django.core.cache import cache

from provenance.errors import ProblemError

TTL_S = 600  # a challenge must be solved and used within ten minutes
_USED = "public:pow:used:"


def _hmac_key() -> str:
    return hashlib.sha256(b"provenance.public.pow:" + settings.SECRET_KEY.encode()).hexdigest()


def challenge_create() -> dict[str, Any]:
    """A fresh challenge as the ALTCHA widget and ``altcha.solve_challenge_v1`` take it."""
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=TTL_S)
    made = altcha.create_challenge_v1(
        altcha.ChallengeOptionsV1(
            algorithm="SHA-256",
            max_number=settings.PROVENANCE_PUBLIC_POW_MAX_NUMBER,
            hmac_key=_hmac_key(),
            expires=expires,
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
    signature = altcha.PayloadV1.from_base64(encoded).signature
    if not cache.add(_USED + signature, 1, TTL_S):  # atomic: SET NX on Redis
        raise ProofOfWorkRequired("this proof of work was already used")
