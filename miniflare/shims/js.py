"""Local stand-in for the `js` module: only WebSocketPair, the one JS global the worker uses."""

from __future__ import annotations

from typing import Any

from miniflare.websockets import LocalWebSocket


class _Pair:
    def __init__(self) -> None:
        self.client = LocalWebSocket(role="client")
        self.server = LocalWebSocket(role="server")
        self.client.peer = self.server
        self.server.peer = self.client

    def object_values(self) -> tuple[LocalWebSocket, LocalWebSocket]:
        """(client, server), as `Object.values(new WebSocketPair())` gives in Pyodide."""
        return self.client, self.server


class WebSocketPair:
    """`new WebSocketPair()` is spelled `WebSocketPair.new()` from Python."""

    @staticmethod
    def new() -> _Pair:
        return _Pair()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"the local runtime does not implement js.{name}")
