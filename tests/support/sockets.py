"""A client's sockets as the chat core's port sees them: frames kept as parsed JSON."""

from __future__ import annotations

import json
from typing import Any


class RecordingSockets:
    """One socket that is also the hub of all of them: collects what the service sends."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def send(self, text: str) -> None:
        self.frames.append(json.loads(text))

    def close(self, code: int, reason: str) -> None:
        pass

    def sockets(self) -> list[RecordingSockets]:
        return [self]


class AttachedSocket:
    """A hibernatable socket as the socket policy sees it: its attachment (an encoded
    `SocketMeta`), the frames sent to it and how it was closed."""

    def __init__(self, meta: str) -> None:
        self.meta = meta
        self.closed: tuple[int, str] | None = None
        self.sent: list[str] = []

    def attachment(self) -> str:
        return self.meta

    def send(self, text: str) -> None:
        self.sent.append(text)

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


class SocketList:
    """The hub over `all` (the test may add to it): lists the sockets not yet closed."""

    def __init__(self, sockets: list[AttachedSocket]) -> None:
        self.all = sockets

    def sockets(self) -> list[AttachedSocket]:
        return [s for s in self.all if s.closed is None]
