"""Outbound HTTP for the core's httpx client: the platform's `fetch` under Pyodide.

Two HTTP stacks run in the deployed worker, each with a fetch backend of its own:

- the core's httpx.AsyncClient (model gateway, platform services, token index,
  analytics) gets `FetchTransport` explicitly from `outbound_transport()`. Which
  httpx build pywrangler vendors (PyPI's, whose default transport opens sockets,
  or Pyodide's, patched to use fetch) then does not matter;
- the `mcp` SDK (v2) talks through httpx2, which picks its own JS fetch transport
  (httpx2-jsfetch) on Emscripten. The two never share a client or a transport.

Under CPython (tests, local runtime) `outbound_transport()` returns None, and
`outbound_client()` gives each object its own httpx client on httpx's own transport,
with one TLS context shared by the process.

Timeouts and cancellation: httpx's own timeouts act on sockets, and there are
none here, so the transport enforces them itself and stops the request through
an AbortController made for each fetch (without one, fetch would run on,
holding one of the few connections a request may have open). fetch resolves
once the response head has arrived and cannot tell connecting apart from
waiting for the server, so the head gets the connect and read timeouts together;
each chunk of the body gets the read timeout. A timeout aborts the fetch and
raises httpx.ReadTimeout; a cancelled task aborts it and stays cancelled. The
write and pool timeouts have no counterpart in fetch.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

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


T = TypeVar("T")


class _Abortable:
    """One fetch's AbortController, and the waits it bounds."""

    def __init__(self, controller: Any, request: httpx.Request) -> None:
        self.controller = controller
        self.request = request
        self.aborted = False

    def abort(self) -> None:
        """Stop the fetch (its promise, or its body stream, rejects with AbortError)."""
        if self.aborted:
            return
        self.aborted = True
        try:
            self.controller.abort()
        except Exception:
            # Aborting can only fail once the runtime has torn the request down.
            pass

    async def wait(self, work: Awaitable[T], seconds: float | None, what: str) -> T:
        """Await JS work within `seconds`; on timeout or cancellation, abort the fetch."""
        try:
            if seconds is None:
                return await work
            return await asyncio.wait_for(work, seconds)
        except TimeoutError as exc:
            self.abort()
            raise httpx.ReadTimeout(
                f"{what} took longer than {seconds:g} s; the fetch was aborted",
                request=self.request,
            ) from exc
        except asyncio.CancelledError:
            self.abort()
            raise


class _JsBodyStream(httpx.AsyncByteStream):
    """A JS ReadableStream read chunk by chunk as bytes, each read within the read timeout."""

    def __init__(
        self, body: Any, abortable: _Abortable | None = None, read_timeout: float | None = None
    ) -> None:
        self._body = body
        self._abortable = abortable
        self._read_timeout = read_timeout
        self._reader: Any = None
        self._finished = is_js_nullish(body)

    async def _read(self) -> Any:
        if self._abortable is None:
            return await self._reader.read()
        return await self._abortable.wait(
            self._reader.read(), self._read_timeout, "a chunk of the response body"
        )

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if is_js_nullish(self._body):
            return
        self._reader = self._body.getReader()
        while True:
            try:
                chunk = await self._read()
            except (httpx.TimeoutException, asyncio.CancelledError):
                raise
            except Exception as exc:
                # The body stream errored: the connection dropped, or it was aborted.
                request = self._abortable.request if self._abortable else None
                raise httpx.ReadError(str(exc), request=request) from exc
            if bool(py_value(getattr(chunk, "done", True))):
                self._finished = True
                return
            data = py_value(chunk.value)
            if data:
                yield data if isinstance(data, bytes) else str(data).encode()

    async def aclose(self) -> None:
        # Closed before the end: abort, so the runtime stops downloading what nobody reads.
        if not self._finished and self._abortable is not None:
            self._abortable.abort()
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


def _head_timeout(timeouts: dict[str, float | None]) -> float | None:
    # No read timeout means "wait for the server as long as it takes", and fetch
    # gives no moment at which the connect timeout alone could be checked.
    read = timeouts.get("read")
    if read is None:
        return None
    return read + (timeouts.get("connect") or 0.0)


class FetchTransport(httpx.AsyncBaseTransport):
    """An httpx transport over the platform's global `fetch`, one AbortController per request."""

    def __init__(
        self,
        fetch: Callable[..., Any] | None = None,
        abort_controller: Callable[[], Any] | None = None,
    ) -> None:
        self._fetch = fetch
        self._abort_controller = abort_controller

    def _js_fetch(self) -> Callable[..., Any]:
        if self._fetch is None:
            from js import fetch

            self._fetch = fetch
        return self._fetch

    def _new_controller(self) -> Any:
        if self._abort_controller is None:
            from js import AbortController

            self._abort_controller = AbortController.new
        return self._abort_controller()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        abortable = _Abortable(self._new_controller(), request)
        init: dict[str, Any] = {
            "method": request.method,
            "headers": [
                [k.decode("latin-1"), v.decode("latin-1")]
                for k, v in request.headers.raw
                if k.decode("latin-1").lower() not in _DROPPED_REQUEST_HEADERS
            ],
            "signal": abortable.controller.signal,
        }
        if body:
            init["body"] = to_js_bytes(body)
        try:
            js_response = await abortable.wait(
                self._js_fetch()(str(request.url), to_js_object(init)),
                _head_timeout(timeouts),
                "the response head (connect + read timeout)",
            )
        except (httpx.TimeoutException, asyncio.CancelledError):
            raise
        except Exception as exc:
            # fetch rejects for DNS, TLS and connection failures; workerd says only "Network
            # connection lost." for a refused connection and a dropped pooled one alike
            # (a plain Error, not the standard's TypeError: cloudflare/workerd#7195).
            raise httpx.ConnectError(str(exc), request=request) from exc
        return httpx.Response(
            status_code=int(py_value(js_response.status)),
            headers=_response_headers(js_response.headers),
            stream=_JsBodyStream(js_response.body, abortable, timeouts.get("read")),
            request=request,
        )


def outbound_transport() -> httpx.AsyncBaseTransport | None:
    """The platform's transport for the core's httpx client, or None off the platform."""
    if sys.platform == "emscripten":
        return FetchTransport()
    return None


def outbound_client() -> httpx.AsyncClient:
    """The core's httpx client for one object: the platform's fetch on Cloudflare; under
    CPython httpx's own transport, one pool shared by the process's objects
    (albert.outbound.shared_pool), with its one TLS context."""
    from albert.outbound.client import ObjectHttpClient

    platform = outbound_transport()
    if platform is not None:
        return ObjectHttpClient(transport=platform)
    from albert.outbound.shared_pool import object_transport

    return ObjectHttpClient(transport=object_transport())
