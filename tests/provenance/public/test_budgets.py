"""Budgets counted in the cache: per address, global, per partner; 429 with Retry-After."""

from __future__ import annotations

import pytest

from provenance.public.budgets import (
    BudgetExceeded,
    address_scope,
    anonymous_shared_spend,
    anonymous_spend,
    global_share_spent,
    partner_limit,
    partner_spend,
    prefix_limits,
    requester,
)
from provenance.public.models import Partner


def test_an_address_meets_its_budget_and_others_do_not(settings):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 2
    anonymous_spend("10.0.0.1")
    anonymous_spend("10.0.0.1")
    with pytest.raises(BudgetExceeded) as refused:
        anonymous_spend("10.0.0.1")
    assert refused.value.status_code == 429 and 1 <= refused.value.retry_after <= 60
    anonymous_spend("10.0.0.2")


def test_the_global_budget_holds_for_every_address(settings):
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 3
    for i in range(3):
        anonymous_shared_spend(f"10.0.{i}.1")
    with pytest.raises(BudgetExceeded):
        anonymous_shared_spend("10.0.9.1")
    anonymous_spend("10.0.9.1")  # an address's own budget is its own


def test_a_prefix_spends_at_most_its_share_of_the_level_above(settings):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 10
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 1000
    settings.PROVENANCE_PUBLIC_NETWORK_SHARE = 0.1
    settings.PROVENANCE_PUBLIC_SITE_SHARE = 0.5
    assert prefix_limits("192.0.2.1") == [("192.0.2.0/24", 100)]
    assert prefix_limits("2001:db8:1:2::1") == [
        ("2001:db8:1::/56", 50),
        ("2001:db8:1::/48", 100),
    ]
    assert prefix_limits("not an address") == []
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 20  # never less than one address's budget
    assert prefix_limits("2001:db8:1:2::1") == [("2001:db8:1::/56", 10), ("2001:db8:1::/48", 10)]


def test_a_partner_budget_defaults_to_the_setting_and_can_be_set(db, settings):
    settings.PROVENANCE_PUBLIC_PARTNER_PER_MIN = 120
    default = Partner.objects.create(name="a", key_sha256="a" * 64)
    own = Partner.objects.create(name="b", key_sha256="b" * 64, per_minute=2)
    assert partner_limit(default) == 120 and partner_limit(own) == 2
    partner_spend(own)
    partner_spend(own)
    with pytest.raises(BudgetExceeded):
        partner_spend(own)
    partner_spend(default)  # budgets are per partner


@pytest.fixture
def two_processes(redis_server, monkeypatch):
    """Two Redis clients, as two web processes have; the budgets counted through either."""
    from provenance import throttling
    from provenance.cache import FailoverRedisCache

    clients = [FailoverRedisCache(redis_server.url, {}) for _ in range(2)]
    clients[0].clear()

    def use(i: int) -> None:
        monkeypatch.setattr(throttling, "default_cache", clients[i])

    yield use
    clients[0].clear()


def test_a_partner_budget_holds_across_two_processes_sharing_redis(db, two_processes):
    partner = Partner.objects.create(name="c", key_sha256="c" * 64, per_minute=4)
    for i in range(4):
        two_processes(i % 2)
        partner_spend(partner)
    for i in range(2):
        two_processes(i)
        with pytest.raises(BudgetExceeded):
            partner_spend(partner)


def test_an_ipv6_address_counts_as_its_slash_64_and_an_ipv4_one_as_itself():
    assert address_scope("2001:db8:1:2:aaaa::1") == address_scope("2001:db8:1:2::ffff")
    assert address_scope("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert address_scope("2001:db8:1:3::1") != address_scope("2001:db8:1:2::1")
    assert address_scope("::ffff:192.0.2.7") == "192.0.2.7" == address_scope("192.0.2.7")
    assert address_scope("192.0.2.7") != address_scope("192.0.2.8")
    assert address_scope("not an address") == "not an address"
    assert address_scope("2002:c000:207::1") == "192.0.2.7"  # 6to4
    assert address_scope("2001:0:4136:e378:8000:63bf:3fff:fdf8") == "192.0.2.7"  # Teredo


def test_a_requester_names_a_partner_or_an_address_scope_hashed(db):
    partner = Partner.objects.create(name="p", key_sha256="c" * 64)
    assert requester("192.0.2.7", partner) == f"partner:{partner.pk}"
    named = requester("2001:db8::1")
    assert named == requester("2001:db8::2") and "2001" not in named


def test_the_global_share_spent_is_read_across_processes(db, two_processes, settings):
    """The proof of work's difficulty reads the global window (one ZCOUNT), whichever
    process spent it."""
    settings.PROVENANCE_PUBLIC_GLOBAL_PER_MIN = 4
    assert global_share_spent() == 0.0
    two_processes(0)
    anonymous_shared_spend("10.0.0.1")
    anonymous_shared_spend("10.0.1.1")
    two_processes(1)
    assert global_share_spent() == 0.5
