"""Webhook callbacks reach only globally reachable addresses: shared address space (cloud
metadata at 100.100.100.200), 6to4 and NAT64 wrappings of private addresses, multicast and
the rest that ``ipaddress`` does not call global are refused."""

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
    ],
)
def test_addresses_that_are_not_global_are_refused(url):
    with pytest.raises(services.CallbackRefused, match="not globally reachable"):
        services.callback_url_validate(url)


@pytest.mark.parametrize(
    "url",
    ["https://93.184.216.34/hook", "http://[2002:5db8:d822::]/hook", "http://[2606:4700::1111]/"],
)
def test_global_addresses_pass(url):
    assert services.callback_url_validate(url) == url
