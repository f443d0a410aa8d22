"""Chat sockets over the hibernatable WebSocket API.

The contract both runtimes are held to (tests/cloudflare/test_socket_port.py):

- `send` on a socket the peer closed, or that we closed, is dropped silently;
- `close` with a code that may not be sent on the wire (1005, 1006, 1015, or
  outside 1000-4999) closes with 1000; a reason is cut to the 123 bytes allowed;
  closing twice is harmless;
- the hub lists every accepted socket still open, including those that survived
  hibernation (the platform keeps them, not this object);
- a received message is str for a text frame and bytes for a binary frame.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from albert.cloudflare.ffi import py_value, to_js_array

log = logging.getLogger(__name__)

# Close codes that RFC 6455 reserves for reporting and forbids in a close frame.
_UNSENDABLE = {1004, 1005, 1006, 1015}
_MAX_REASON_BYTES = 123
_OPEN = 1  # WebSocket.readyState


def close_code(code: int) -> int:
    """A close code the platform accepts, standing in 1000 for reserved ones."""
    sendable = 1000 <= code <= 1014 or 3000 <= code <= 4999
    return code if sendable and code not in _UNSENDABLE else 1000


def close_reason(reason: str) -> str:
    """The reason cut, on a character boundary, to what a close frame can carry."""
    encoded = reason.encode()[:_MAX_REASON_BYTES]
    return encoded.decode(errors="ignore")


class WorkersSocket:
    """One accepted server-side WebSocket."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws

    @property
    def raw(self) -> Any:
        """The platform's WebSocket object."""
        return self._ws

    def send(self, text: str) -> None:
        """Queue a text frame; a closed socket drops it."""
        try:
            self._ws.send(text)
        except Exception:
            # The peer went away; the turn still finishes and is persisted.
            log.debug("send on a closed socket dropped")

    def close(self, code: int, reason: str) -> None:
        """Start the closing handshake (idempotent)."""
        try:
            self._ws.close(close_code(code), close_reason(reason))
        except Exception:
            log.debug("close on a closed socket ignored")

    def attachment(self) -> str | None:
        """The text attached when the socket was accepted (it survives hibernation)."""
        try:
            value = py_value(self._ws.deserializeAttachment())
        except Exception:
            return None
        return value if isinstance(value, str) else None

    @property
    def is_open(self) -> bool:
        """False once either side started closing (readyState CLOSING or CLOSED)."""
        state = py_value(getattr(self._ws, "readyState", _OPEN))
        return not isinstance(state, int) or state == _OPEN


class WorkersSocketHub:
    """All sockets the object has accepted, including ones that survived hibernation."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def sockets(self) -> Sequence[WorkersSocket]:
        """Every open socket of this object (one we started closing no longer counts)."""
        return [s for s in map(WorkersSocket, self._ctx.getWebSockets()) if s.is_open]


def accept_websocket(ctx: Any, tags: Sequence[str] = (), attachment: str | None = None) -> Any:
    """Accept a hibernatable WebSocket and return the 101 response for the client end.

    `attachment` (text) is kept with the socket across hibernation; see
    WorkersSocket.attachment.
    """
    response, _socket = accept_websocket_pair(ctx, tags, attachment)
    return response


def accept_websocket_pair(
    ctx: Any, tags: Sequence[str] = (), attachment: str | None = None
) -> tuple[Any, WorkersSocket]:
    """Like `accept_websocket`, and the accepted server end too.

    Frames sent on it before the response is returned are queued and reach the
    browser first, ahead of anything sent later. `tags` (for `getWebSockets(tag)`) go
    as a JS array: the platform refuses a Python list.
    """
    from js import WebSocketPair
    from workers import Response

    client, server = WebSocketPair.new().object_values()
    if attachment is not None:
        server.serializeAttachment(attachment)
    if tags:
        ctx.acceptWebSocket(server, to_js_array(tags))
    else:
        ctx.acceptWebSocket(server)
    return Response(None, status=101, web_socket=client), WorkersSocket(server)


def message_payload(message: Any) -> str | bytes:
    """A received message as str (text frame) or bytes (binary frame: an ArrayBuffer)."""
    if isinstance(message, str | bytes):
        return message
    value = py_value(message)
    if isinstance(value, str | bytes):
        return value
    raise TypeError(f"unexpected WebSocket message type {type(message).__name__}")
