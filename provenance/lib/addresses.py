"""The IPv4 addresses an IPv6 address may stand for.

Plain Python, no Django. A connection to one of these IPv6 addresses can end at the IPv4
address inside it, on a network that maps, translates or tunnels it (RFC 4291, RFC 6052,
RFC 8215, RFC 3056, RFC 4380, RFC 5214): whoever vets an address (the webhooks' guard
against requests to private hosts) vets both.

* IPv4-mapped ``::ffff:a.b.c.d`` and IPv4-compatible ``::a.b.c.d`` (deprecated, still
  routed by some stacks);
* IPv4-translated ``::ffff:0:a.b.c.d`` (SIIT);
* NAT64: the well-known prefix ``64:ff9b::/96`` and the local-use ``64:ff9b:1::/48``, where
  an operator may embed the IPv4 address at any of RFC 6052's layouts (a /48, /56, /64 or
  /96 prefix): every layout is a candidate;
* 6to4 ``2002:a.b.c.d::/48``;
* Teredo ``2001::/32``: its server and its (obfuscated) client;
* ISATAP interface identifiers ``...:0:5efe:a.b.c.d`` and ``...:200:5efe:a.b.c.d``.
"""

from __future__ import annotations

import ipaddress

IPv4 = ipaddress.IPv4Address
IPv6 = ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_COMPATIBLE = ipaddress.ip_network("::/96")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_ISATAP = (0x00005EFE, 0x02005EFE)  # the interface identifier's upper 32 bits (u bit 0 or 1)


def wrapped_ipv4(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[IPv4]:
    """Every IPv4 address ``address`` may stand for (none for an IPv4 address, or an IPv6
    one that carries none), each once."""
    if not isinstance(address, IPv6):
        return []
    value = int(address)
    found: list[IPv4] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address in _COMPATIBLE or address in _TRANSLATED or address in _NAT64:
        found.append(IPv4(value & 0xFFFFFFFF))
    if address in _NAT64_LOCAL:
        found += [_rfc6052(value, length) for length in (48, 56, 64, 96)]
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found += list(address.teredo)
    if (value >> 32) & 0xFFFFFFFF in _ISATAP:
        found.append(IPv4(value & 0xFFFFFFFF))
    return list(dict.fromkeys(found))


def _rfc6052(value: int, prefix: int) -> IPv4:
    """The IPv4 address embedded after a ``prefix``-bit NAT64 prefix (RFC 6052, section 2.2:
    bits 64 to 71 are zero and skipped)."""
    bits = f"{value:0128b}"
    if prefix == 96:
        return IPv4(int(bits[96:], 2))
    embedded = (bits[prefix:64] + bits[72:])[:32]
    return IPv4(int(embedded, 2))
