"""Bounds on what an MCP server may send us, and what its HTTP answers said.

Every request of an MCP connection goes through `ResponseGuard`, an `httpx2` transport in
front of the real one (fetch on Cloudflare, httpx2's own under CPython):

- It asks for `Accept-Encoding: identity` and refuses a compressed answer, so the bytes
  counted are the bytes decoded: a 9 MB gzip body cannot become 2 GiB in memory.
- A POST's answer is read only up to a cap (`RESULT_CAP_BYTES` for `tools/call`,
  `LIST_CAP_BYTES` for anything else). A JSON answer over it is replaced by a JSON-RPC
  error for the same request (code `ANSWER_REFUSED`), which the SDK hands to the
  caller like any server error; an event stream over it ends with such an error event.
  Either way the oversized body is never parsed, so the event loop stays free and the
  call's own timeout holds.
- An event stream's single event is bounded too (the legacy SSE transport reads every
  answer from one long stream).
- What the HTTP layer said and the SDK does not keep is recorded: a 404 to a request that
  carried a session id (the server forgot our session; servers of the TypeScript SDK say
  so with a 400 naming the session) and the status of the last refused
  request (401 with its `WWW-Authenticate`, 404, 405), for `albert.mcp.connection` to
  tell a lost session, a server that needs authorization and a URL that is no MCP
  endpoint apart.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from pydantic import BaseModel, ConfigDict

RESULT_CAP_BYTES = 2 * 1024 * 1024
LIST_CAP_BYTES = 8 * 1024 * 1024
EVENT_CAP_BYTES = RESULT_CAP_BYTES
# In JSON-RPC's implementation-defined server-error range; the message says who refused.
ANSWER_REFUSED = -32050
REFUSED_PREFIX = "answer refused by the client"

_SESSION_HEADER = "mcp-session-id"
# What is kept of a refusal's body (an error message; the rest is not read).
REFUSAL_BODY_BYTES = 16 * 1024
_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")


class HttpRefusal(BaseModel):
    """An HTTP status an MCP request was refused with, as the connection reports it."""

    model_config = ConfigDict(frozen=True)

    status: int
    method: str
    www_authenticate: str | None = None

    def describe(self) -> str:
        """A short reason for the server's status line."""
        if self.status == 401:
            return "the server needs authorization (HTTP 401)"
        if self.status == 403:
            return "the server refused our credentials (HTTP 403)"
        if self.status in (404, 405):
            return f"no MCP endpoint at this URL (HTTP {self.status} to {self.method})"
        return f"the server answered HTTP {self.status} to {self.method}"

    @property
    def permanent(self) -> bool:
        """No retry of the same request can fix it (credentials, or not an MCP endpoint)."""
        return self.status in (401, 403, 404, 405)


def too_large_message(cap: int, method: str) -> str:
    """The error text of an answer over its cap."""
    return f"{REFUSED_PREFIX}: the server's answer to {method} is over {cap // 1024} KiB"


def _request_of(request: httpx2.Request) -> tuple[str, Any]:
    """The JSON-RPC method and id of a POST body (`("", None)` when it is not one)."""
    try:
        body = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return "", None
    if not isinstance(body, dict):
        return "", None
    method = body.get("method")
    return (method if isinstance(method, str) else ""), body.get("id")


def _error_body(request_id: Any, message: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": ANSWER_REFUSED, "message": message},
        }
    ).encode()


async def _read_at_most(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, and whether it had more; the response is closed."""
    pieces: list[bytes] = []
    size = 0
    try:
        async for piece in response.aiter_raw():
            size += len(piece)
            if size > limit:
                pieces.append(piece[: len(piece) - (size - limit)])
                return b"".join(pieces), True
            pieces.append(piece)
    finally:
        await response.aclose()
    return b"".join(pieces), False


def _with_body(request: httpx2.Request, response: httpx2.Response, body: bytes) -> httpx2.Response:
    """The response with the body read already (its length set anew)."""
    return httpx2.Response(
        response.status_code,
        headers=[(k, v) for k, v in response.headers.multi_items() if k != "content-length"],
        content=body,
        extensions=response.extensions,
        request=request,
    )


class _CappedEvents(httpx2.AsyncByteStream):
    """An event stream cut off at `cap` bytes in all, or at one event over `event_cap`.

    A POST's stream (`request_id` set) ends with a JSON-RPC error event for its request, so
    the caller gets an answer; the legacy transport's GET stream just ends.
    """

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        *,
        cap: int | None,
        event_cap: int,
        request_id: Any,
        message: str,
    ) -> None:
        self._inner = inner
        self._cap = cap
        self._event_cap = event_cap
        self._request_id = request_id
        self._message = message

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        event = 0
        tail = b""
        async for piece in self._inner:
            total += len(piece)
            scan = tail + piece
            end = max(scan.rfind(mark) + len(mark) if mark in scan else -1 for mark in _EVENT_ENDS)
            event = len(scan) - end if end >= 0 else event + len(piece)
            tail = scan[-3:]
            if (self._cap is not None and total > self._cap) or event > self._event_cap:
                if self._request_id is not None:
                    error = _error_body(self._request_id, self._message).decode()
                    yield f"\n\nevent: message\ndata: {error}\n\n".encode()
                return
            yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


class ResponseGuard(httpx2.AsyncBaseTransport):
    """Caps every answer of one MCP connection and remembers what HTTP said."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        *,
        result_cap: int = RESULT_CAP_BYTES,
        list_cap: int = LIST_CAP_BYTES,
        event_cap: int = EVENT_CAP_BYTES,
    ) -> None:
        self._inner = inner
        self._result_cap = result_cap
        self._list_cap = list_cap
        self._event_cap = event_cap
        self.session_lost = False
        self.refusal: HttpRefusal | None = None
        self.refused_answer: str | None = None

    def cap_for(self, method: str) -> int:
        """The largest answer accepted to a request of this method."""
        return self._result_cap if method == "tools/call" else self._list_cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = "identity"
        method, request_id = _request_of(request) if request.method == "POST" else ("", None)
        response = await self._inner.handle_async_request(request)
        label = method or request.method
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            why = f"{REFUSED_PREFIX}: it came compressed ({encoding}) though identity was asked"
            return self._refused(request, request_id, why)
        if response.status_code >= 400:
            # Its body is an error message: read here (bounded), and handed on as it came.
            return await self._note_refusal(request, response, label)
        if response.status_code < 300:
            self.refusal = None  # e.g. a probe refused before a fallback was accepted
        if request.method != "POST":
            return self._capped_stream(request, response, None, None, "")
        cap = self.cap_for(method)
        message = too_large_message(cap, label)
        kind = response.headers.get("content-type", "").lower()
        if kind.startswith("text/event-stream"):
            return self._capped_stream(request, response, cap, request_id, message)
        return await self._capped_body(request, response, cap, request_id, message)

    async def _note_refusal(
        self, request: httpx2.Request, response: httpx2.Response, label: str
    ) -> httpx2.Response:
        """Record a refusal; the response comes back whole (its short body read here)."""
        body, _ = await _read_at_most(response, REFUSAL_BODY_BYTES)
        if _SESSION_HEADER in request.headers and (
            # The spec's answer to an unknown session is 404; the TypeScript SDK's servers
            # answer 400 "No valid session ID provided".
            response.status_code == 404
            or (response.status_code == 400 and b"session" in body.lower())
        ):
            self.session_lost = True
        self.refusal = HttpRefusal(
            status=response.status_code,
            method=label,
            www_authenticate=response.headers.get("www-authenticate"),
        )
        return _with_body(request, response, body)

    def _refused(self, request: httpx2.Request, request_id: Any, message: str) -> httpx2.Response:
        self.refused_answer = message
        if request_id is None:
            # Nobody waits on this answer by id (a GET stream, a notification): refuse it.
            return httpx2.Response(406, request=request)
        return httpx2.Response(
            200,
            headers={"content-type": "application/json"},
            content=_error_body(request_id, message),
            request=request,
        )

    def _capped_stream(
        self,
        request: httpx2.Request,
        response: httpx2.Response,
        cap: int | None,
        request_id: Any,
        message: str,
    ) -> httpx2.Response:
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return response
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedEvents(
                stream,
                cap=cap,
                event_cap=self._event_cap,
                request_id=request_id,
                message=message,
            ),
            extensions=response.extensions,
            request=request,
        )

    async def _capped_body(
        self,
        request: httpx2.Request,
        response: httpx2.Response,
        cap: int,
        request_id: Any,
        message: str,
    ) -> httpx2.Response:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            await response.aclose()
            return self._refused(request, request_id, message)
        body, over = await _read_at_most(response, cap)
        if over:
            return self._refused(request, request_id, message)
        return _with_body(request, response, body)

    async def aclose(self) -> None:
        await self._inner.aclose()
