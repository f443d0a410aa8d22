"""Outbound HTTP for the core's httpx client: the platform's `fetch` under Pyodide.

Two HTTP stacks run in the deployed worker, each with a fetch backend of its own:

- the core's httpx.AsyncClient (model gateway, platform services, token index,
  analytics) gets `FetchTransport` explicitly from `outbound_transport()`. Which
  httpx build pywrangler vendors (PyPI's, whose default transport opens sockets,
  or Pyodide's, patched to use fetch) then does not matter;
- the `mcp` SDK (v2) talks through httpx2, which picks its own JS fetch transport
  (httpx2-jsfetch) on Emscripten. The two never share a client or a transport.

Under CPython (tests, local runtime) `outbound_transport()` returns None and
httpx keeps its normal transport.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from albert.cloudflare.ffi import is_js_nullish, py_value, to_js_bytes, to_js_object

# Content-Encoding is undone by fetch itself; passing it on would make httpx decode twice.
_DROPPED_RESPONSE_HEADERS = {"content-encoding", "content-length"}
# fetch sets these itself from the URL and the body; hop-by-hop ones do not cross.
_DROPPED_REQUEST_HEADERS = {
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
}


class _JsBodyStream(httpx.AsyncByteStream):
    """A JS ReadableStream read chunk by chunk as bytes."""

    def __init__(self, body: Any) -> None:
        self._body = body
        self._reader: Any = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if is_js_nullish(self._body):
            return
        self._reader = self._body.getReader()
        while True:
            chunk = await self._reader.read()
            if bool(py_value(getattr(chunk, "done", True))):
                return
            data = py_value(chunk.value)
            if data:
                yield data if isinstance(data, bytes) else str(data).encode()

    async def aclose(self) -> None:
        if self._reader is not None:
            try:
                await self._reader.cancel()
            except Exception:
                # Cancelling a finished or errored stream is allowed to fail.
                pass


def _response_headers(js_headers: Any) -> list[tuple[str, str]]:
    entries = js_headers.entries() if hasattr(js_headers, "entries") else js_headers.items()
    pairs = [tuple(py_value(entry)) for entry in entries]
    return [(str(k), str(v)) for k, v in pairs if str(k).lower() not in _DROPPED_RESPONSE_HEADERS]


class FetchTransport(httpx.AsyncBaseTransport):
    """An httpx transport over the platform's global `fetch`."""

    def __init__(self, fetch: Callable[..., Any] | None = None) -> None:
        self._fetch = fetch

    def _js_fetch(self) -> Callable[..., Any]:
        if self._fetch is None:
            from js import fetch

            self._fetch = fetch
        return self._fetch

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        init: dict[str, Any] = {
            "method": request.method,
            "headers": [
                [k.decode("latin-1"), v.decode("latin-1")]
                for k, v in request.headers.raw
                if k.decode("latin-1").lower() not in _DROPPED_REQUEST_HEADERS
            ],
        }
        if body:
            init["body"] = to_js_bytes(body)
        try:
            js_response = await self._js_fetch()(str(request.url), to_js_object(init))
        except Exception as exc:
            # fetch rejects with a TypeError for DNS, TLS and connection failures.
            raise httpx.ConnectError(str(exc), request=request) from exc
        return httpx.Response(
            status_code=int(py_value(js_response.status)),
            headers=_response_headers(js_response.headers),
            stream=_JsBodyStream(js_response.body),
            request=request,
        )


def outbound_transport() -> httpx.AsyncBaseTransport | None:
    """The transport the core's httpx client should use on this runtime."""
    if sys.platform == "emscripten":
        return FetchTransport()
    return None
