"""Budgets of public checks, counted in the cache (Redis across processes: the sliding
windows of ``provenance.throttling``, each spend one atomic script): a partner counts against
its own budget; an anonymous caller in two steps, so that a body that is not a check costs
nothing beyond its own address:

1. ``anonymous_spend``, on the headers: its address's scope (an IPv4 address, an IPv6 /64;
   ``provenance.lib.identity``: 6to4, Teredo and IPv4-mapped addresses count as their IPv4
   host);
2. ``anonymous_shared_spend``, once the body holds a text to check: the prefixes around it
   and everyone together, in one script: an IPv4 /24, or an IPv6 /56 and /48, each spending
   at most its share of the level above (``PROVENANCE_PUBLIC_NETWORK_SHARE`` of the global
   budget for a /24 or a /48, ``PROVENANCE_PUBLIC_SITE_SHARE`` of its /48's for a /56, never
   less than one address's budget), then the global budget.

So one /64, /56 or /48, or one IPv4 /24, cannot spend the global budget for everyone, and a
flood from many of them that fills it makes the proof of work dearer
(``provenance.public.proof_of_work``). A refused check takes no place in the windows its
step counts; the answer is 429 with Retry-After. The same ``requester`` names who asks to the
scrubbing guard's per-requester caps, and ``guard_prefixes`` the IPv6 /56 and /48 around it
that the guard counts too."""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings

from provenance.errors import ProblemError
from provenance.lib.identity import IPV6_LEVELS, address_scope, scope_levels
from provenance.public.models import Partner
from provenance.throttling import Window, sliding_window, window_count

MINUTE = 60
GLOBAL_KEY = "public:budget:global"


class BudgetExceeded(ProblemError):
    status_code = 429
    default_code = "throttled"

    def __init__(self, wait_s: float) -> None:
        self.retry_after = max(1, math.ceil(wait_s))
        super().__init__(f"too many checks; try again in {self.retry_after} s")


def requester(address: str, partner: Partner | None = None) -> str:
    """Who asks, as the caches count it: a partner, or an address's scope (only as a hash:
    the cache holds no client address in the clear)."""
    if partner is not None:
        return f"partner:{partner.pk}"
    digest = hashlib.sha256(address_scope(address).encode()).hexdigest()[:32]
    return f"address:{digest}"


def guard_prefixes(address: str, partner: Partner | None = None) -> list[tuple[str, float, float]]:
    """The IPv6 prefixes around an anonymous requester that the scrubbing guard counts too,
    each as the caches name it (a hash), with how many requesters' worth of texts, then of
    variants of one text, it is answered: its /56, one subscriber's prefix, held at will as
    its /64 is, the variants of one requester and the texts its budget buys (its limit over
    an address's); its /48, often one organization's, both as its budget buys. None for a
    partner, an IPv4 address (its /24 is its neighbours') or what is not an address."""
    levels = scope_levels(address)
    if partner is not None or len(levels) != len(IPV6_LEVELS):
        return []
    floor = settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN
    (site, site_limit), (network, network_limit) = prefix_limits(address)
    return [
        (_guard_name(site), site_limit / floor, 1.0),
        (_guard_name(network), network_limit / floor, network_limit / floor),
    ]


def _guard_name(prefix: str) -> str:
    return f"prefix:{hashlib.sha256(prefix.encode()).hexdigest()[:32]}"


def _address_key(address: str) -> str:
    return f"public:budget:{requester(address)}"


def _prefix_key(prefix: str) -> str:
    return "public:budget:prefix:" + hashlib.sha256(prefix.encode()).hexdigest()[:32]


def anonymous_spend(address: str) -> None:
    """One check from ``address``, on its own scope's budget (BudgetExceeded): all a body
    that holds no text to check ever spends."""
    _spend([(_address_key(address), settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN, MINUTE)])


def prefix_limits(address: str) -> list[tuple[str, int]]:
    """The prefixes around ``address``'s scope and what each may spend a minute, smallest
    first: an IPv4 /24; an IPv6 /56 and /48 (none for what is not an address)."""
    floor = settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN
    network = max(floor, int(settings.PROVENANCE_PUBLIC_NETWORK_SHARE * global_limit()))
    levels = scope_levels(address)[1:]
    if len(levels) == 2:  # IPv6: the /56 within its /48
        site = max(floor, int(settings.PROVENANCE_PUBLIC_SITE_SHARE * network))
        return [(levels[0], site), (levels[1], network)]
    return [(prefix, network) for prefix in levels]


def anonymous_shared_spend(address: str) -> None:
    """One check from ``address`` with a text to check: its prefixes' budgets and the global
    one, in one atomic step (BudgetExceeded; a refusal takes no place in any of them)."""
    windows: list[Window] = [
        (_prefix_key(prefix), limit, MINUTE) for prefix, limit in prefix_limits(address)
    ]
    _spend([*windows, (GLOBAL_KEY, global_limit(), MINUTE)])


def global_limit() -> int:
    return int(settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN)


def global_share_spent() -> float:
    """How much of the global anonymous budget the last minute spent, 0 to 1."""
    return min(1.0, window_count(GLOBAL_KEY, MINUTE, time.time()) / global_limit())


def partner_limit(partner: Partner) -> int:
    return partner.per_minute or settings.PROVENANCE_PUBLIC_PARTNER_PER_MIN


def partner_spend(partner: Partner) -> None:
    """One check of ``partner`` against its own budget (BudgetExceeded)."""
    _spend([(f"public:budget:partner:{partner.pk}", partner_limit(partner), MINUTE)])


def _spend(windows: list[Window]) -> None:
    wait = sliding_window(windows, time.time())
    if wait is not None:
        raise BudgetExceeded(wait)
