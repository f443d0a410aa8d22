"""Which MCP server URLs a client may configure: no reaching into private networks.

In production every host is resolved and refused when any of its addresses is
loopback, private, link-local, unique-local or otherwise not globally routable.
Local mode allows loopback so the local stack can reach its own servers.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from typing import Literal
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, Field, ValidationError

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
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    )
]


class UrlRefused(ValueError):
    """The URL may not be used as an MCP server; the message says why."""


def _unmapped(ip: IpAddress) -> IpAddress:
    # ::ffff:127.0.0.1 and friends must be judged as the IPv4 address they carry.
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback(ip: IpAddress) -> bool:
    """True for 127/8 and ::1 (also when IPv4-mapped)."""
    return _unmapped(ip).is_loopback


def refused_reason(ip: IpAddress) -> str | None:
    """Why an address is not reachable from production, or None when it is fine."""
    ip = _unmapped(ip)
    for network in _REFUSED_NETWORKS:
        if ip.version == network.version and ip in network:
            return f"{ip} is in the non-public range {network}"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


async def system_resolver(host: str) -> list[str]:
    """Every address the host name resolves to, through the system resolver."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


class _DnsAnswer(BaseModel):
    type: int
    data: str


class _DnsJson(BaseModel):
    """The JSON form of a DNS answer (application/dns-json), as DoH resolvers send it."""

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


def url_host(url: str) -> str:
    """The host of an http(s) URL, or UrlRefused saying what is wrong with it."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a malformed port
    except ValueError as exc:
        raise UrlRefused(f"not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https"):
        raise UrlRefused("the URL must start with http:// or https://")
    if not parts.hostname:
        raise UrlRefused("the URL has no host")
    if parts.username or parts.password:
        raise UrlRefused("credentials in the URL are not allowed; use a secret reference")
    if port == 0:
        raise UrlRefused("port 0 is not a valid port")
    return parts.hostname


async def check_url(
    url: str, mode: Literal["local", "production"], resolver: Resolver = system_resolver
) -> None:
    """Raise UrlRefused when `url` may not be used as an MCP server in this mode."""
    host = url_host(url)
    literal = _parse_ip(host)
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
