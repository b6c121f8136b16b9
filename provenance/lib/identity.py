"""Who is asking: one answer for every throttle, lockout, budget, guard cap and log line.

The client's address is the connection's (``REMOTE_ADDR``) unless the deployment names its
own proxies (``PROVENANCE_TRUSTED_PROXIES``: how many of them append to X-Forwarded-For; by
default 1 behind a TLS proxy, ``DJANGO_BEHIND_TLS_PROXY``, else 0). Then it is the hop the
outermost of them appended, the N-th from the right; hops to its left were written by the
client and are never read. A request that did not pass every trusted proxy (fewer hops than
N, or no header at all) is counted by the leftmost hop or by ``REMOTE_ADDR``, both written by
the deployment.

What one actor controls at will is counted as one, its **scope**:

- an IPv4 address is itself; an IPv6 address that carries one, the IPv4 address it carries:
  IPv4-mapped (``::ffff:a.b.c.d``), IPv4-translated (``::ffff:0:a.b.c.d``) and NAT64's
  well-known prefix (``64:ff9b::/96``): how a translator in front of an IPv6-only service
  (SIIT-DC) shows its IPv4 clients, each of them one client, not one /64 for all; 6to4
  (``2002::/16``: every IPv4 host holds a /48 of it) and Teredo (``2001::/32``: the client's
  public IPv4 address, obfuscated);
- any other IPv6 address, its /64 (one subscriber's prefix: a host picks any address inside
  it).

``scope_levels`` adds the larger prefixes one operator usually holds (an IPv4 /24; an IPv6
/56 and /48), which the public budgets count too."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# The WSGI environ's entry the access log prints (``ClientAddressMiddleware``) and gunicorn's
# access-log format that prints it in place of REMOTE_ADDR (the runner, docker-compose.yml and
# deploy/kubernetes pass it; otherwise gunicorn's default format).
ENVIRON_KEY = "provenance.client"
ACCESS_LOG_FORMAT = '%({provenance.client}e)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'
IPV6_SCOPE = 64
IPV6_LEVELS = (64, 56, 48)  # the address scope, one site, one operator's allocation
_BRACKETED = re.compile(r"^\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?$")  # [v6] or [v6]:port
# IPv6 prefixes whose last 32 bits are an IPv4 address: NAT64's well-known prefix (RFC 6052)
# and IPv4-translated addresses (RFC 2765's SIIT).
_IPV4_TAIL = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::ffff:0:0:0/96"))
_V4_PORT = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$")  # a.b.c.d:port


def parse_address(value: Any) -> IPAddress | None:
    """An address as proxies write it (bare, ``[v6]``, ``[v6]:port`` or ``v4:port``; an IPv6
    zone dropped), or None when it is none."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    for form in (_BRACKETED, _V4_PORT):
        found = form.match(text)
        if found:
            text = found.group(1)
            break
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.scope_id:
        parsed = ipaddress.IPv6Address(int(parsed))
    return parsed


def client_address(request: Any) -> str:
    """The address of the client of ``request`` (a Django or DRF request), as a string:
    ``REMOTE_ADDR``, or behind the deployment's trusted proxies the hop they appended. An
    unreadable hop falls back to ``REMOTE_ADDR`` (a proxy of the deployment writes an
    address; anything else was not written by one)."""
    meta = getattr(request, "META", {})
    remote = str(meta.get("REMOTE_ADDR") or "")
    proxies = int(getattr(settings, "PROVENANCE_TRUSTED_PROXIES", 0) or 0)
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    if proxies <= 0 or not forwarded:
        return remote
    hops = str(forwarded).split(",")
    hop = parse_address(hops[-min(proxies, len(hops))])
    return str(hop) if hop is not None else remote


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, translated, NAT64's well-known prefix,
    6to4, Teredo's client), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if any(address in prefix for prefix in _IPV4_TAIL):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def _unwrapped(address: str) -> IPAddress | None:
    parsed = parse_address(address)
    if isinstance(parsed, ipaddress.IPv6Address):
        return embedded_ipv4(parsed) or parsed
    return parsed


def address_scope(address: str) -> str:
    """What one actor holds at will: an IPv4 address (carried by an IPv6 one included), or
    an IPv6 address's /64 (``2001:db8:1:2::/64``). Not an address (a test client's, a unix
    socket's): the value as it is."""
    return scope_levels(address)[0]


def scope_levels(address: str) -> list[str]:
    """The address's scope, then the larger prefixes around it, smallest first: an IPv4
    address and its /24; an IPv6 /64, its /56 and its /48. Not an address: its value
    alone."""
    parsed = _unwrapped(address)
    if parsed is None:
        return [address]
    if isinstance(parsed, ipaddress.IPv4Address):
        return [str(parsed), str(ipaddress.IPv4Network(f"{parsed}/24", strict=False))]
    return [str(ipaddress.IPv6Network(f"{parsed}/{bits}", strict=False)) for bits in IPV6_LEVELS]


def client_scope(request: Any) -> str:
    """``address_scope`` of the request's ``client_address``: the one identity every
    throttle, lockout, budget and guard cap counts by."""
    return address_scope(client_address(request))


def axes_client_address(request: Any) -> str | None:
    """django-axes' ``AXES_CLIENT_IP_CALLABLE``: the client's scope as an address (axes keeps
    it in an address column): an IPv4 address, or the first address of an IPv6 /64; None
    when there is no address at all."""
    parsed = _unwrapped(client_address(request))
    if parsed is None:
        return None
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network(f"{parsed}/{IPV6_SCOPE}", strict=False).network_address)
    return str(parsed)
