"""Which MCP server URLs a client may configure: no reaching into private networks.

In production every host is resolved and refused when any of its addresses is
loopback, private, link-local, unique-local or otherwise not globally routable.
An IPv6 address that carries an IPv4 address (IPv4-mapped, IPv4-compatible, SIIT,
NAT64 with the well-known prefix, 6to4, Teredo) is judged by the IPv4 address it
carries too; NAT64's local-use prefix 64:ff9b:1::/48 is refused outright. A host
written as a number in any form but dotted decimal (2130706433, 0x7f.1, 0177.0.0.1,
127.1) is refused, as is any URL with characters outside printable ASCII.
Local mode allows loopback so the local stack can reach its own servers.

Checking a name once is not enough (DNS rebinding: the name may resolve elsewhere
by the time a socket opens), so `checked_addresses` is also what the MCP
connection's transport calls right before each socket opens, and the socket goes
to the address just checked (albert.mcp.pinned_transport).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import re
import socket
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import SplitResult, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], Awaitable[list[str]]]

# Spelled out (not only `is_private`) so the refused ranges are reviewable at a glance.
_REFUSED_NETWORKS = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "64:ff9b:1::/48",  # NAT64 local-use (RFC 8215): translates into private networks
        "100::/64",
        "2001:db8::/32",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
]
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")


class UrlRefused(ValueError):
    """The URL may not be used as an MCP server; the message says why."""


@dataclass(frozen=True)
class ConnectCheck:
    """What the transport checks each socket's address with: the mode and the resolver."""

    mode: Literal["local", "production"]
    resolver: Resolver


def embedded_ipv4(ip: IpAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries by a transition mechanism (none for v4)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    elif ip in _IPV4_COMPATIBLE and int(ip) > 1:  # ::a.b.c.d (but not :: and ::1)
        found.append(low32)
    elif ip in _SIIT or ip in _NAT64_WELL_KNOWN:
        found.append(low32)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def _unmapped(ip: IpAddress) -> IpAddress:
    # ::ffff:127.0.0.1 (and ::127.0.0.1) is the IPv4 loopback for local mode's allowance.
    carried = embedded_ipv4(ip)
    if isinstance(ip, ipaddress.IPv6Address) and carried and (ip.ipv4_mapped or int(ip) >> 32 == 0):
        return carried[0]
    return ip


def is_loopback(ip: IpAddress) -> bool:
    """True for 127/8 and ::1 (also when IPv4-mapped or IPv4-compatible)."""
    return _unmapped(ip).is_loopback


def _own_reason(ip: IpAddress) -> str | None:
    for network in _REFUSED_NETWORKS:
        if ip.version == network.version and ip in network:
            return f"{ip} is in the non-public range {network}"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


def refused_reason(ip: IpAddress) -> str | None:
    """Why an address is not reachable from production, or None when it is fine.

    An IPv6 address carrying an IPv4 address is refused when either is non-public.
    """
    for carried in embedded_ipv4(ip):
        reason = _own_reason(carried)
        if reason is not None:
            return f"{ip} carries {carried}: {reason}"
    return _own_reason(ip)


# At most this many system lookups of MCP server names at once, per event loop. Each one
# holds a worker thread of the loop, for as long as the resolver's timeout when a name
# does not answer; a hundred objects retrying an unreachable server would hold them all,
# and the loop's other work on those threads (the model gateway's own lookup before it
# connects) would queue behind them.
SYSTEM_LOOKUPS_AT_ONCE = 2
_lookup_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


async def system_resolver(host: str) -> list[str]:
    """Every address the host name resolves to, through the system resolver."""
    loop = asyncio.get_running_loop()
    slots = _lookup_slots.get(loop)
    if slots is None:
        slots = _lookup_slots[loop] = asyncio.Semaphore(SYSTEM_LOOKUPS_AT_ONCE)
    await slots.acquire()
    lookup = loop.run_in_executor(
        None, functools.partial(socket.getaddrinfo, host, None, type=socket.SOCK_STREAM)
    )
    # The slot is the thread's, not the caller's: a caller that gives up (its attempt's
    # bound) leaves the lookup running on its thread, and the slot comes back only when
    # that thread is free again.
    lookup.add_done_callback(lambda _: slots.release())
    infos = await asyncio.shield(lookup)
    return sorted({str(info[4][0]) for info in infos})


class _DnsAnswer(BaseModel):
    model_config = ConfigDict(defer_build=True)

    type: int
    data: str


class _DnsJson(BaseModel):
    """The JSON form of a DNS answer (application/dns-json), as DoH resolvers send it."""

    model_config = ConfigDict(defer_build=True)

    Status: int
    Answer: list[_DnsAnswer] = Field(default_factory=list)


_A, _AAAA = 1, 28


def doh_resolver(http: httpx.AsyncClient, url: str, timeout_seconds: float = 5.0) -> Resolver:
    """A resolver asking a DNS-over-HTTPS endpoint (A and AAAA records, JSON form)."""

    async def resolve(host: str) -> list[str]:
        addresses: set[str] = set()
        for record in ("A", "AAAA"):
            try:
                response = await http.get(
                    url,
                    params={"name": host, "type": record},
                    headers={"accept": "application/dns-json"},
                    timeout=timeout_seconds,
                )
            except httpx.HTTPError as exc:
                raise OSError(f"DNS over HTTPS failed: {type(exc).__name__}") from exc
            if response.status_code != 200:
                raise OSError(f"DNS over HTTPS answered {response.status_code}")
            try:
                answer = _DnsJson.model_validate_json(response.content)
            except ValidationError as exc:
                raise OSError("DNS over HTTPS sent an unreadable answer") from exc
            addresses.update(a.data for a in answer.Answer if a.type in (_A, _AAAA))
        if not addresses:
            raise OSError(f"{host} has no A or AAAA records")
        return sorted(addresses)

    return resolve


def resolver_for(
    choice: Literal["auto", "system", "doh"],
    mode: Literal["local", "production"],
    http: httpx.AsyncClient,
    doh_url: str,
) -> Resolver:
    """The resolver a deployment uses: "auto" is DoH in production, the system's locally."""
    if choice == "doh" or (choice == "auto" and mode == "production"):
        return doh_resolver(http, doh_url)
    return system_resolver


def _parse_ip(text: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


# The WHATWG URL parser reads a host whose last label is a number (decimal, octal or
# hex) as an IPv4 address: 2130706433, 0x7f.1 and 127.1 all mean 127.0.0.1 to fetch.
_NUMERIC_LABEL = re.compile(r"(?:0[xX][0-9A-Fa-f]*|[0-9]+)")
_HOST_CHARS = re.compile(r"[a-z0-9.-]{1,253}|[0-9a-f:.]{2,45}")


def url_host(url: str) -> str:
    """The host of an http(s) URL, or UrlRefused saying what is wrong with it."""
    parts = _url_parts(url)
    host = (parts.hostname or "").rstrip(".")
    _check_host(host)
    # Our parser and the HTTP client's must agree on the host, or the check judged
    # another host than the one a request would go to.
    try:
        client_host = httpx.URL(url).host.rstrip(".")
    except (httpx.InvalidURL, ValueError) as exc:
        raise UrlRefused(f"not a valid URL: {exc}") from exc
    if client_host != host:
        raise UrlRefused("the URL's host is ambiguous")
    return host


def _url_parts(url: str) -> SplitResult:
    """The URL split, once its characters, scheme, host, credentials and port are acceptable."""
    if not url.isascii() or not url.isprintable() or any(c in url for c in " \\"):
        raise UrlRefused(
            "the URL may hold printable ASCII only (no spaces or backslashes); "
            "write an international host name in its xn-- form"
        )
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a malformed port
    except ValueError as exc:
        raise UrlRefused(f"not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https"):
        raise UrlRefused("the URL must start with http:// or https://")
    if not parts.hostname:
        raise UrlRefused("the URL has no host")
    if "@" in parts.netloc or parts.username or parts.password:
        raise UrlRefused("credentials in the URL are not allowed; use a secret reference")
    if port == 0:
        raise UrlRefused("port 0 is not a valid port")
    return parts


def _check_host(host: str) -> None:
    if "%" in host:
        raise UrlRefused("a zone id in the host is not allowed")
    if not _HOST_CHARS.fullmatch(host):
        raise UrlRefused(f"{host!r} is not a valid host name")
    if _parse_ip(host) is None and _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        raise UrlRefused(f"{host!r} reads as an IP address: write it in dotted-decimal form")


async def checked_addresses(
    host: str, mode: Literal["local", "production"], resolver: Resolver = system_resolver
) -> list[IpAddress]:
    """Every address `host` stands for, all of them allowed in this mode; else UrlRefused.

    This is the check the transport repeats right before each socket opens.
    """
    literal = _parse_ip(host.strip("[]"))
    if literal is not None:
        addresses = [literal]
    else:
        try:
            resolved = await resolver(host)
        except (OSError, UnicodeError) as exc:
            raise UrlRefused(f"the host {host!r} does not resolve") from exc
        addresses = [ip for ip in (_parse_ip(a) for a in resolved) if ip is not None]
        if not addresses:
            raise UrlRefused(f"the host {host!r} does not resolve")
    for ip in addresses:
        if mode == "local" and is_loopback(ip):
            continue
        reason = refused_reason(ip)
        if reason is not None:
            where = "" if literal is not None else f"{host!r} resolves to {ip}: "
            raise UrlRefused(f"{where}{reason}; only public servers can be used")
    return addresses


async def check_url(
    url: str, mode: Literal["local", "production"], resolver: Resolver = system_resolver
) -> None:
    """Raise UrlRefused when `url` may not be used as an MCP server in this mode."""
    await checked_addresses(url_host(url), mode, resolver)
