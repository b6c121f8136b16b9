"""Budgets of public checks, counted in the cache (Redis across processes: the sliding
windows of ``provenance.throttling``, one atomic script per check): an anonymous caller
counts against its address's budget and the global one, a partner against its own. A
refused check takes no place; the answer is 429 with Retry-After."""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings

from provenance.errors import ProblemError
from provenance.public.models import Partner
from provenance.throttling import Window, sliding_window

MINUTE = 60


class BudgetExceeded(ProblemError):
    status_code = 429
    default_code = "throttled"

    def __init__(self, wait_s: float) -> None:
        self.retry_after = max(1, math.ceil(wait_s))
        super().__init__(f"too many checks; try again in {self.retry_after} s")


def _address_key(address: str) -> str:
    # the address only as a hash: the cache holds no client address in the clear
    digest = hashlib.sha256(address.encode()).hexdigest()[:32]
    return f"public:budget:address:{digest}"


def anonymous_spend(address: str) -> None:
    """One check from ``address``: its budget and the global one (BudgetExceeded)."""
    _spend(
        [
            (_address_key(address), settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN, MINUTE),
            ("public:budget:global", settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN, MINUTE),
        ]
    )


def partner_limit(partner: Partner) -> int:
    return partner.per_minute or settings.PROVENANCE_PUBLIC_PARTNER_PER_MIN


def partner_spend(partner: Partner) -> None:
    """One check of ``partner`` against its own budget (BudgetExceeded)."""
    _spend([(f"public:budget:partner:{partner.pk}", partner_limit(partner), MINUTE)])


def _spend(windows: list[Window]) -> None:
    wait = sliding_window(windows, time.time())
    if wait is not None:
        raise BudgetExceeded(wait)
