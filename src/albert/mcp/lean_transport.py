"""The MCP client's plain-HTTP requests over the lean asyncio HTTP/1.1 transport (CPython).

The `mcp` SDK talks through `httpx2`, whose default transport (httpcore2 + h11) was ~40% of
the client's CPU per tool call: a pool, an h11 state machine, context managers and a
separate `send()` for the request head and body, then the body read through four layers.
`albert.outbound.asyncio_transport` already does HTTP/1.1 for the worker's other clients
with bytes operations over asyncio; `httpx2` is the same API as `httpx` under another
name, so this module hands an `httpx2.Request` to that transport and turns its answer and
its errors back into `httpx2`'s own types. The SDK, its client and its semantics (timeouts,
redirects within the origin, event streams) are unchanged: only the bytes on the socket are
produced and read by other code.

Only `http://` goes this way. A TLS request keeps `httpx2`'s transport: the SSRF pinning of
`albert.mcp.pinned_transport` connects to a checked address and verifies the certificate
against the original name (`sni_hostname`), which the lean transport does not do. Imported
by `albert.mcp.connection` only, never under Pyodide (there the platform's fetch is used).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2

from albert.outbound.asyncio_transport import AsyncioHttp11Transport

# Every transport error of httpx has a twin of the same name in httpx2.
_TWINS: dict[type[httpx.HTTPError], type[httpx2.HTTPError]] = {}


def twin_error(exc: httpx.HTTPError, request: httpx2.Request) -> httpx2.HTTPError:
    """The `httpx2` exception of the same kind and message as an `httpx` one."""
    kind = type(exc)
    target = _TWINS.get(kind)
    if target is None:
        # The nearest httpx class httpx2 also has (every httpx error class has one today).
        for base in kind.__mro__:
            found = getattr(httpx2, base.__name__, None)
            if isinstance(found, type) and issubclass(found, httpx2.HTTPError):
                target = found
                break
        else:  # pragma: no cover - httpx.HTTPError itself has a twin
            target = httpx2.TransportError
        _TWINS[kind] = target
    if issubclass(target, httpx2.HTTPStatusError):  # pragma: no cover - never raised by a transport
        return httpx2.TransportError(str(exc), request=request)
    return target(str(exc), request=request)  # type: ignore[call-arg]


class _Body(httpx2.AsyncByteStream):
    """A response body of the lean transport, as an httpx2 stream with httpx2 errors."""

    def __init__(self, inner: Any, request: httpx2.Request) -> None:
        self._inner = inner
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._inner:
                yield piece
        except httpx.HTTPError as exc:
            raise twin_error(exc, self._request) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


class LeanHttpTransport(httpx2.AsyncBaseTransport):
    """`httpx2` requests over plain HTTP through the asyncio transport; TLS through `tls`."""

    def __init__(
        self, tls: httpx2.AsyncBaseTransport, lean: AsyncioHttp11Transport | None = None
    ) -> None:
        self._tls = tls
        # A pool of its own: closing this MCP connection closes its sockets, and no
        # other client's connection is ever handed to it.
        self._lean = lean or AsyncioHttp11Transport(max_idle_per_origin=16)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme != "http":
            return await self._tls.handle_async_request(request)
        # A streamed request body is read first: the lean transport then sends it with the
        # head in one write, framed as its headers say (the SDK's bodies are bytes already).
        await request.aread()
        try:
            # The lean transport reads only what both libraries name alike: the method,
            # the URL's raw parts, the raw headers, the content and the extensions.
            answer = await self._lean.handle_async_request(request)  # type: ignore[arg-type]
        except httpx.HTTPError as exc:
            raise twin_error(exc, request) from exc
        return httpx2.Response(
            status_code=answer.status_code,
            headers=answer.headers.raw,
            stream=_Body(answer.stream, request),
            extensions=answer.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        try:
            await self._lean.aclose()
        finally:
            await self._tls.aclose()
