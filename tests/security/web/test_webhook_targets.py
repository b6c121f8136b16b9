"""Webhook callbacks reach only globally reachable addresses: shared address space (cloud
metadata at 100.100.100.200), multicast and the rest that ``ipaddress`` does not call global
are refused, and so is every IPv6 form of an IPv4 address that is not public (mapped,
compatible, translated, NAT64 well-known and local-use, 6to4, Teredo, ISATAP): on a network
that translates or tunnels it, a connection to the IPv6 address reaches the IPv4 one."""

from __future__ import annotations

import pytest

from provenance.webhooks import services


@pytest.mark.parametrize(
    "url",
    [
        "http://100.100.100.200/latest/meta-data",  # shared space: a cloud metadata service
        "http://100.64.0.1/hook",
        "http://[2002:7f00:1::]/hook",  # 6to4 around 127.0.0.1
        "http://[2002:a9fe:a9fe::]/hook",  # 6to4 around 169.254.169.254
        "http://[64:ff9b::a00:1]/hook",  # NAT64 around 10.0.0.1
        "http://224.0.0.1/hook",  # multicast
        "http://198.18.0.1/hook",  # benchmarking
        "http://[2001:db8::1]/hook",  # documentation
        "http://[::ffff:127.0.0.1]/hook",  # IPv4-mapped
        "http://[::127.0.0.1]/hook",  # IPv4-compatible (deprecated, still routed by some)
        "http://[::a9fe:a9fe]/hook",  # IPv4-compatible 169.254.169.254
        "http://[::ffff:0:7f00:1]/hook",  # IPv4-translated (SIIT) 127.0.0.1
        "http://[::ffff:0:a9fe:a9fe]/hook",  # IPv4-translated 169.254.169.254
        "http://[64:ff9b::7f00:1]/hook",  # NAT64 well-known prefix around 127.0.0.1
        "http://[64:ff9b:1::a9fe:a9fe]/hook",  # local-use NAT64 (/96) around metadata
        "http://[64:ff9b:1:a9fe:a9:fe00::]/hook",  # local-use NAT64, /48 layout (RFC 6052)
        "http://[64:ff9b:1:5db8:d8:2200::]/hook",  # local-use NAT64: never global itself
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",  # Teredo, client 127.0.0.1
        "http://[2606:4700::5efe:7f00:1]/hook",  # ISATAP interface id around 127.0.0.1
        "http://[2606:4700::200:5efe:a00:1]/hook",  # ISATAP (universal bit) around 10.0.0.1
    ],
)
def test_addresses_that_are_not_global_are_refused(url):
    with pytest.raises(services.CallbackRefused, match="not globally reachable"):
        services.callback_url_validate(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://93.184.216.34/hook",
        "http://[2002:5db8:d822::]/hook",  # 6to4 around a public address
        "http://[2606:4700::1111]/",
        "http://[64:ff9b::5db8:d822]/hook",  # NAT64 well-known prefix around a public one
        "http://[::ffff:5db8:d822]/hook",  # IPv4-mapped public
    ],
)
def test_global_addresses_pass(url):
    assert services.callback_url_validate(url) == url


def test_one_unwrap_names_every_embedded_address():
    """The one function that unwraps: each form gives the IPv4 address it carries."""
    from ipaddress import IPv4Address, ip_address

    from provenance.lib.addresses import wrapped_ipv4

    loopback = IPv4Address("127.0.0.1")
    for form in (
        "::ffff:127.0.0.1",
        "::127.0.0.1",
        "::ffff:0:7f00:1",
        "64:ff9b::7f00:1",
        "64:ff9b:1::7f00:1",
        "2002:7f00:1::",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
        "2606:4700::5efe:7f00:1",
    ):
        assert loopback in wrapped_ipv4(ip_address(form)), form
    assert wrapped_ipv4(ip_address("2606:4700::1111")) == []
    assert wrapped_ipv4(ip_address("93.184.216.34")) == []
