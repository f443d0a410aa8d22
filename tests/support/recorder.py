"""A loopback HTTP listener that records every request that reaches it.

Used where a test must show that something (a secret, a request) did or did not
arrive: the listener answers 500 to everything, so no client mistakes it for a
working server, and keeps each request's method, path and headers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from tests.support.asgi_server import AsgiServer


class RecordedRequest(BaseModel):
    method: str
    path: str
    headers: dict[str, str]


class RecordingApp:
    """ASGI app: records, then answers 500."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        self.requests.append(
            RecordedRequest(method=scope["method"], path=scope["path"], headers=headers)
        )
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def saw(self, text: str) -> bool:
        """True when `text` arrived in any header of any request."""
        return any(text in value for r in self.requests for value in r.headers.values())


@contextmanager
def recording_listener() -> Iterator[tuple[AsgiServer, RecordingApp]]:
    """A started listener on a free loopback port, and its recording."""
    app = RecordingApp()
    with AsgiServer(app) as server:
        yield server, app
