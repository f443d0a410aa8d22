"""Chat sockets over the hibernatable WebSocket API."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from js import WebSocketPair
from workers import Response

log = logging.getLogger(__name__)


class WorkersSocket:
    """One accepted server-side WebSocket."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws

    def send(self, text: str) -> None:
        try:
            self._ws.send(text)
        except Exception:
            # The peer went away; the turn still finishes and is persisted.
            log.debug("send on a closed socket dropped")

    def close(self, code: int, reason: str) -> None:
        try:
            self._ws.close(code, reason)
        except Exception:
            log.debug("close on a closed socket ignored")


class WorkersSocketHub:
    """All sockets the object has accepted, including ones that survived hibernation."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def sockets(self) -> Sequence[WorkersSocket]:
        return [WorkersSocket(ws) for ws in self._ctx.getWebSockets()]


def accept_websocket(ctx: Any) -> Response:
    """Accept a hibernatable WebSocket and return the 101 response for the client end."""
    client, server = WebSocketPair.new().object_values()
    ctx.acceptWebSocket(server)
    return Response(None, status=101, web_socket=client)


def message_payload(message: Any) -> str | bytes:
    """A received message as str (text frame) or bytes (binary frame)."""
    if isinstance(message, str | bytes):
        return message
    to_bytes = getattr(message, "to_bytes", None)
    return to_bytes() if to_bytes is not None else bytes(message)
