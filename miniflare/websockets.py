"""A WebSocket end as the worker sees it, bridged to a real ASGI WebSocket.

It takes and refuses what workerd's WebSocket does (measured there: tests/cloudflare/
test_binding_calls.py runs on both): a close code the wire cannot carry, a reason over
123 bytes, a send after close and an attachment that cannot be structured-cloned are
refused with workerd's messages; a socket we close reads CLOSING until the peer answers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from miniflare.storage import JsArray

# Outgoing queue items: ("text", str) | ("bytes", bytes) | ("close", (code, reason)).
Outgoing = tuple[str, Any]

OPEN, CLOSING, CLOSED = 1, 2, 3
_RESERVED_CLOSE_CODES = frozenset({1004, 1005, 1006, 1015})
_MAX_REASON_BYTES = 123
# What crosses into JS as a value structured clone can copy (anything else is a proxy).
_CLONEABLE = (str, int, float, bool, type(None))


class DOMException(Exception):
    """A DOMException as Pyodide raises one: its message starts with the exception's name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


class LocalWebSocket:
    """One end of a WebSocketPair; the server end is what the Durable Object holds."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.peer: LocalWebSocket | None = None
        self.tags: list[str] = []
        # (class name, object id) of the Durable Object that accepted this socket.
        self.owner: tuple[str, Any] | None = None
        self._attachment: Any = None
        self._outgoing: asyncio.Queue[Outgoing] = asyncio.Queue()
        # Either side started closing: nothing more may be sent.
        self.closed = False
        # The connection ended (the peer answered our close, or went away).
        self.gone = False

    def send(self, message: str) -> None:
        """Queue a text frame to the browser, in order; a send after close is refused.

        Text only: workerd sends a Python `bytes` as the text of its repr (it crosses as a
        proxy, which the platform turns into a string), so the local runtime refuses one.
        """
        if not isinstance(message, str):
            raise TypeError(
                f"the local runtime sends text frames only, not {type(message).__name__} "
                "(workerd would send its repr as text)"
            )
        if self.closed:
            raise TypeError("Can't call WebSocket send() after close().")
        self._outgoing.put_nowait(("text", message))

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake; a second call does nothing, as on workerd."""
        if code in _RESERVED_CLOSE_CODES or not 1000 <= code <= 4999:
            raise DOMException("InvalidAccessError", f"Invalid WebSocket close code: {code}.")
        if len(reason.encode()) > _MAX_REASON_BYTES:
            raise DOMException(
                "SyntaxError",
                "WebSocket close reason must not be longer than 123 bytes when UTF-8 encoded.",
            )
        if self.closed:
            return
        self.closed = True
        self._outgoing.put_nowait(("close", (code, reason)))

    @property
    def readyState(self) -> int:
        """OPEN until either side starts closing, CLOSING until the connection ends, CLOSED."""
        if not self.closed:
            return OPEN
        return CLOSED if self.gone else CLOSING

    def serializeAttachment(self, value: Any) -> None:
        """Keep `value` with the socket: a JS value only (a Python object cannot be cloned)."""
        if not isinstance(value, (*_CLONEABLE, JsArray)):
            raise DOMException("DataCloneError", "[object Object] could not be cloned.")
        self._attachment = value

    def deserializeAttachment(self) -> Any:
        return self._attachment

    async def next_outgoing(self) -> Outgoing:
        """The next frame the runtime must write to the real socket."""
        return await self._outgoing.get()

    def mark_closed(self) -> None:
        """The connection ended; later sends fail like they do on a closed socket."""
        self.closed = True
        self.gone = True
        self._outgoing.put_nowait(("close", (1006, "")))
