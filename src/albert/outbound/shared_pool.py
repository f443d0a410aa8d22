"""One keep-alive pool for every object of a CPython process (the local runtime).

A runtime may install a transport of its own for the objects it hosts
(`install_object_transport`: the local runtime's lean one, miniflare.outbound_transport);
without one, httpx's own transport is shared.

Each object keeps its own `httpx.AsyncClient` (its cookies and defaults stay its own), but
under CPython they all send through one `httpx.AsyncHTTPTransport`: 1,000 objects talking
to one model gateway reuse a few connections instead of opening a pool each. An object
closing its client leaves the shared pool open; the runtime closes it when it stops
(`close_shared_pool`). On Cloudflare the platform's fetch is the transport instead.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from albert.outbound.tls import shared_tls_context

# Connections the pool keeps open at most, and how many idle ones it keeps.
MAX_CONNECTIONS = 1024
MAX_IDLE = 256

_pool: httpx.AsyncHTTPTransport | None = None
_installed: Callable[[], httpx.AsyncBaseTransport] | None = None


def install_object_transport(factory: Callable[[], httpx.AsyncBaseTransport] | None) -> None:
    """What each object's client sends through from now on (None: the shared httpx pool)."""
    global _installed
    _installed = factory


def object_transport() -> httpx.AsyncBaseTransport:
    """The transport of a new object's client under CPython."""
    return _installed() if _installed is not None else SharedPoolTransport()


def shared_pool() -> httpx.AsyncHTTPTransport:
    """The process's pool (made on first use)."""
    global _pool
    if _pool is None:
        _pool = httpx.AsyncHTTPTransport(
            verify=shared_tls_context(),
            limits=httpx.Limits(
                max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_IDLE
            ),
        )
    return _pool


class SharedPoolTransport(httpx.AsyncBaseTransport):
    """One object's view of the shared pool: closing it leaves the pool open."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await shared_pool().handle_async_request(request)

    async def aclose(self) -> None:
        return None


async def close_shared_pool() -> None:
    """Close the pool's connections (the runtime's stop); a later use opens a new pool."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        await pool.aclose()
