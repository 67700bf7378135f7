"""Which webhook destinations may be called: public addresses only, unless the operator allows
private ones (``WORKMEM_WEBHOOKS_ALLOW_PRIVATE``).

Owns the URL rules (http or https, a host, no credentials in it) and the address rule: every
address the host resolves to must be public — not loopback, private, link-local, CGNAT,
multicast, reserved or unspecified — so a subscription cannot reach the service's own network.
``refusal`` is pure; ``vet`` resolves the host first. Never sends a request.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]


class DestinationRefused(ValueError):
    """The URL is not one a webhook may be sent to; the message says why."""


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""The well-known NAT64 prefix: its last 32 bits are the IPv4 address a translator reaches."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries to a relay or translator (IPv4-mapped, 6to4's
    2002::/16, NAT64's 64:ff9b::/96), if it carries one."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def kind_of(address: Address) -> str | None:
    """Why ``address`` is not public (``loopback``, ``private``, …), or ``None`` if it is.

    An IPv6 address carrying an IPv4 one is judged by the IPv4 address it reaches."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = embedded_ipv4(address)
        if embedded is not None:
            return kind_of(embedded)
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    )
    for name, hit in checks:
        if hit:
            return name
    return None if address.is_global else "not globally routable"


def target(url: str) -> tuple[str, int]:
    """The host and port a URL names; ``DestinationRefused`` for a URL a webhook cannot use."""
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise DestinationRefused(f"the URL is not valid: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise DestinationRefused("the URL must start with http:// or https://")
    if parts.username is not None or parts.password is not None:
        raise DestinationRefused("the URL must not carry credentials; the payload is signed")
    try:
        port = parts.port
    except ValueError as error:
        raise DestinationRefused(f"the URL's port is not valid: {error}") from None
    if not parts.hostname:
        raise DestinationRefused("the URL has no host")
    if port == 0:
        raise DestinationRefused("the URL's port 0 is not a port one can connect to")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def refusal(host: str, addresses: Iterable[str], *, allow_private: bool) -> str | None:
    """Why a host that resolves to ``addresses`` is refused, or ``None`` when it may be called."""
    found = [ipaddress.ip_address(address.split("%", 1)[0]) for address in addresses]
    if not found:
        return f"{host} does not resolve to any address"
    if allow_private:
        return None
    for address in found:
        kind = kind_of(address)
        if kind is not None:
            return (
                f"{host} resolves to {address}, a {kind} address; set "
                "WORKMEM_WEBHOOKS_ALLOW_PRIVATE=true to allow private destinations"
            )
    return None


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (a literal address is itself)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        # A name that does not resolve, or cannot be a host name at all (IDNA refuses it).
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def vet(url: str, *, allow_private: bool, resolver: Resolver = resolve) -> None:
    """Refuse ``url`` (``DestinationRefused``) unless it may be called now."""
    host, port = target(url)
    reason = refusal(host, await resolver(host, port), allow_private=allow_private)
    if reason is not None:
        raise DestinationRefused(reason)
