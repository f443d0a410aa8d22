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
