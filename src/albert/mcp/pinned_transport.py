"""The MCP client's HTTP transport where Python opens the sockets (CPython hosts).

Every TCP connection, the first and every reconnect or redirect alike, resolves
the host through the deployment's resolver, checks every address with the SSRF
rules (albert.mcp.ssrf.checked_addresses) right before the socket opens, and
connects to an address it just checked. The name itself never reaches the
system resolver, so a DNS answer that changes between the check and the connect
(rebinding) cannot send the request elsewhere. TLS still verifies the original
host name (SNI and certificate), and the Host header is the URL's.

Imported only by albert.mcp.connection, i.e. only once an MCP server is configured.
Under Pyodide the SDK's own fetch transport is used instead: there the platform
opens the connection (see albert.mcp.connection).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from albert.mcp.ssrf import ConnectCheck, UrlRefused, checked_addresses


class CheckedBackend(httpcore2.AsyncNetworkBackend):
    """Opens TCP sockets only to addresses that pass the check at that moment."""

    def __init__(self, check: ConnectCheck, inner: httpcore2.AsyncNetworkBackend | None = None):
        self._check = check
        self._inner = inner or httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await checked_addresses(host, self._check.mode, self._check.resolver)
        failure: Exception | None = None
        for ip in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(ip),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout, OSError) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise UrlRefused("an MCP server is reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class CheckedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport with the checking backend under its connection pool."""

    def __init__(
        self, check: ConnectCheck, inner: httpcore2.AsyncNetworkBackend | None = None
    ) -> None:
        # No proxy from the environment: a proxy would resolve the name itself.
        super().__init__(trust_env=False)
        limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=CheckedBackend(check, inner),
        )
