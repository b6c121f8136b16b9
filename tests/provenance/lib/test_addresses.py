"""Every IPv4 address an IPv6 address may stand for (the webhook filter vets each)."""

from __future__ import annotations

import ipaddress

import pytest

from provenance.lib.addresses import wrapped_ipv4


@pytest.mark.parametrize(
    "address",
    [
        "::ffff:127.0.0.1",  # mapped
        "::127.0.0.1",  # compatible
        "::ffff:0:7f00:1",  # translated
        "64:ff9b::7f00:1",  # NAT64, well-known prefix
        "2002:7f00:1::1",  # 6to4
    ],
)
def test_each_wrapping_of_loopback_is_unwrapped(address):
    assert ipaddress.IPv4Address("127.0.0.1") in wrapped_ipv4(ipaddress.ip_address(address))


def test_a_plain_global_ipv6_address_wraps_no_ipv4_address():
    assert wrapped_ipv4(ipaddress.ip_address("2606:4700::1111")) == []
