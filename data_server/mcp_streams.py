"""The MCP endpoint's GET, answered where the SDK's server has no good answer.

A GET opens the server's event stream (streamable HTTP, 2025 revisions), and only within
a session. The SDK's server answered two GETs badly:

- one with no session (the Vercel AI SDK's client opens its stream before `initialize`):
  a new session was made for it, and refused with 400 carrying that session's id, which
  then answered 404. Answered here as the spec says a server without a stream there does:
  405, with no session made, which such clients take quietly;
- one with `Last-Event-ID` (a client resuming a stream): this server keeps no event
  history (it never sends event ids, so no client of ours has one to send), and the SDK's
  replay path then returned no response at all, a 500. Answered here with a 400 that says
  so.

Requests of the 2026 revisions (no sessions, GET already 405 in the SDK) pass untouched.
"""

from __future__ import annotations

import json

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

_JSON = b"application/json"


class EventStreamGuard:
    """ASGI middleware in front of the MCP endpoint at `path`."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == self.path:
            headers = {name.lower(): value for name, value in scope["headers"]}
            version = headers.get(b"mcp-protocol-version")
            handshake = version is None or version.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
            if handshake and b"last-event-id" in headers:
                await _refuse(
                    send,
                    400,
                    "this server keeps no event history, so a stream cannot be resumed "
                    "with Last-Event-ID; open it without one",
                )
                return
            if handshake and b"mcp-session-id" not in headers:
                await _refuse(
                    send,
                    405,
                    "the event stream is opened within a session: initialize first",
                    allow="POST, DELETE",
                )
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str, *, allow: str | None = None) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    ).encode()
    headers = [(b"content-type", _JSON), (b"content-length", str(len(body)).encode())]
    if allow is not None:
        headers.append((b"allow", allow.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
