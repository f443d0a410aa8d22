"""A WebSocket end as the worker sees it, bridged to a real ASGI WebSocket."""

from __future__ import annotations

import asyncio
from typing import Any

# Outgoing queue items: ("text", str) | ("bytes", bytes) | ("close", (code, reason)).
Outgoing = tuple[str, Any]


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
        self.closed = False

    def send(self, message: str | bytes) -> None:
        """Queue a frame to the browser, in order; sends after close are dropped like workerd's."""
        if self.closed:
            raise RuntimeError("WebSocket is closed")
        self._outgoing.put_nowait(("bytes" if isinstance(message, bytes) else "text", message))

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake."""
        if self.closed:
            return
        self.closed = True
        self._outgoing.put_nowait(("close", (code, reason)))

    @property
    def readyState(self) -> int:
        """1 (OPEN) until either side starts closing, then 3 (CLOSED)."""
        return 3 if self.closed else 1

    def serializeAttachment(self, value: Any) -> None:
        self._attachment = value

    def deserializeAttachment(self) -> Any:
        return self._attachment

    async def next_outgoing(self) -> Outgoing:
        """The next frame the runtime must write to the real socket."""
        return await self._outgoing.get()

    def mark_closed(self) -> None:
        """The browser went away; later sends fail like they do on a closed socket."""
        self.closed = True
        self._outgoing.put_nowait(("close", (1006, "")))
