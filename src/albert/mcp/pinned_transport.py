"""The MCP client's HTTP transport where Python opens the sockets (CPython hosts).

The first request of a connection resolves its host through the deployment's
resolver and checks every address with the SSRF rules
(albert.mcp.ssrf.checked_addresses), right before the socket opens. The request
then goes to the checked address itself, and that address stays pinned for the
transport's life (one MCP connection; a reconnect builds a new one and checks
again). The name never reaches the system resolver, so a DNS answer that changes
after the check (rebinding) cannot send a request elsewhere. The Host header is
the URL's, and TLS verifies the original name (SNI and certificate).

Imported only with albert.mcp.connection or albert.mcp.oauth_flow, i.e. only once an MCP
server is configured. Under Pyodide httpx2's own transport (the platform's fetch) is used
instead: there the platform opens the connection (`transport_for`).
"""

from __future__ import annotations

import asyncio
import sys

import httpx2

from albert.mcp.ssrf import ConnectCheck, IpAddress, checked_addresses


def transport_for(check: ConnectCheck | None) -> httpx2.AsyncBaseTransport:
    """The transport an MCP server's (or its authorization server's) requests go through."""
    if sys.platform == "emscripten":
        # The platform's fetch opens the connection (and refuses private addresses).
        return httpx2.AsyncHTTPTransport()
    if check is None:
        return httpx2.AsyncHTTPTransport(trust_env=False)
    # Checked and pinned (no proxy from the environment: it would resolve the name).
    return CheckedTransport(check)


class CheckedTransport(httpx2.AsyncBaseTransport):
    """Sends every request to an address checked for its host, pinned per host."""

    def __init__(self, check: ConnectCheck, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._check = check
        # No proxy from the environment: a proxy would resolve the name itself.
        self._inner = inner or httpx2.AsyncHTTPTransport(trust_env=False)
        self._pinned: dict[str, list[IpAddress]] = {}
        self._lock = asyncio.Lock()

    async def _addresses(self, host: str) -> list[IpAddress]:
        async with self._lock:
            if host not in self._pinned:
                self._pinned[host] = await checked_addresses(
                    host, self._check.mode, self._check.resolver
                )
            return self._pinned[host]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        host = request.url.host
        addresses = await self._addresses(host)
        # The Host header was set from the original URL when the request was built.
        request.extensions = {**request.extensions, "sni_hostname": host}
        original = request.url
        failure: Exception | None = None
        for address in addresses:
            request.url = original.copy_with(host=str(address))
            try:
                return await self._inner.handle_async_request(request)
            except httpx2.ConnectError as exc:
                failure = exc  # nothing was sent: the next checked address may answer
        assert failure is not None
        raise failure

    async def aclose(self) -> None:
        await self._inner.aclose()
