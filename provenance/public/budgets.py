"""Budgets of public checks, counted in the cache (Redis across processes: the sliding
windows of ``provenance.throttling``, one atomic script per check): an anonymous caller
counts against its address's budget and the global one, a partner against its own. A
refused check takes no place; the answer is 429 with Retry-After.

An IPv6 address counts as its /64 (one subscriber's prefix: a host picks any address inside
it at will), an IPv4 address (an IPv4-mapped IPv6 one included) as itself; the same
``requester`` names who asks to the scrubbing guard's per-requester caps."""

from __future__ import annotations

import hashlib
import ipaddress
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


IPV6_PREFIX = 64


def address_scope(address: str) -> str:
    """What one anonymous budget covers: an IPv4 address, or an IPv6 address's /64."""
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return address  # not an address (a test client's, a proxy's odd value): as it is
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{parsed}/{IPV6_PREFIX}", strict=False))
    return str(parsed)


def requester(address: str, partner: Partner | None = None) -> str:
    """Who asks, as the caches count it: a partner, or an address's scope (only as a hash:
    the cache holds no client address in the clear)."""
    if partner is not None:
        return f"partner:{partner.pk}"
    digest = hashlib.sha256(address_scope(address).encode()).hexdigest()[:32]
    return f"address:{digest}"


def _address_key(address: str) -> str:
    return f"public:budget:{requester(address)}"


def anonymous_spend(address: str) -> None:
    """One check from ``address`` (its IPv4 address or IPv6 /64): its budget and the global
    one (BudgetExceeded)."""
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
