"""Who is asking: the client's address behind the trusted proxies, and its scope."""

from __future__ import annotations

from django.test import RequestFactory

from provenance.lib.identity import address_scope, client_address, embedded_ipv4, scope_levels


def test_without_trusted_proxies_the_socket_address_is_the_client(settings):
    settings.PROVENANCE_TRUSTED_PROXIES = 0
    request = RequestFactory().get("/", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="1.2.3.4")
    assert client_address(request) == "203.0.113.9"


def test_behind_one_proxy_the_hop_it_appended_is_the_client(settings):
    settings.PROVENANCE_TRUSTED_PROXIES = 1
    forged = "198.51.100.1, 203.0.113.9"  # the client's own hop first, the proxy's last
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forged)
    assert client_address(request) == "203.0.113.9"


def test_scopes_are_what_one_actor_holds():
    import ipaddress

    assert address_scope("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
    assert address_scope("::ffff:192.0.2.8") == "192.0.2.8"
    assert address_scope("2002:c000:208::1") == "192.0.2.8"  # 6to4
    assert str(embedded_ipv4(ipaddress.IPv6Address("64:ff9b::c000:208"))) == "192.0.2.8"
    assert len(scope_levels("2001:db8:1:2::5")) > len(scope_levels("192.0.2.8")) - 1
