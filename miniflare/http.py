"""Request and Response as the worker code sees them in the local runtime."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any


class Headers:
    """Case-insensitive header map with the `get`/`items` surface of the SDK's headers."""

    def __init__(self, items: Mapping[str, str] | list[tuple[str, str]] | None = None) -> None:
        self._items: dict[str, str] = {}
        pairs = items.items() if isinstance(items, Mapping) else (items or [])
        for key, value in pairs:
            self[key] = value

    def __setitem__(self, key: str, value: str) -> None:
        self._items[key.lower()] = str(value)

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._items.get(key.lower(), default)

    def items(self) -> list[tuple[str, str]]:
        return list(self._items.items())


class Request:
    """An incoming request (the SDK's `workers.Request` surface the project uses)."""

    def __init__(
        self, url: str, *, method: str = "GET", headers: Headers | None = None, body: bytes = b""
    ) -> None:
        self.url = url
        self.method = method.upper()
        self.headers = headers or Headers()
        self._body = body

    @property
    def js_object(self) -> Request:
        """On Cloudflare the JS request; here the request itself."""
        return self

    @property
    def body(self) -> BodyStream | None:
        """The JS `request.body`: a stream of the body, None (JS null) when there is none."""
        return BodyStream(self._body) if self._body else None

    async def text(self) -> str:
        # As the platform's TextDecoder does: invalid UTF-8 becomes U+FFFD, never an error.
        return self._body.decode("utf-8", errors="replace")

    async def bytes(self) -> bytes:
        return self._body

    async def arrayBuffer(self) -> bytes:
        """The JS method (an ArrayBuffer there; bytes here)."""
        return self._body

    async def json(self) -> Any:
        return json.loads(self._body or b"null")

    def clone(self) -> Request:
        return Request(
            self.url, method=self.method, headers=Headers(self.headers.items()), body=self._body
        )


class ReadResult:
    """What a JS stream reader's `read()` resolves to."""

    def __init__(self, done: bool, value: bytes | None = None) -> None:
        self.done = done
        self.value = value


class BodyStream:
    """A request body's ReadableStream: `getReader()`, then `read()` until `done`.

    The runtime has read the body whole already (at most its bound): it is handed over
    in pieces of PIECE_BYTES, as a platform stream hands over what arrived, so a reader
    that stops early is exercised here too.
    """

    PIECE_BYTES = 16 * 1024

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def getReader(self) -> BodyStream:
        return self

    async def read(self) -> ReadResult:
        if self._offset >= len(self._data):
            return ReadResult(done=True)
        piece = self._data[self._offset : self._offset + self.PIECE_BYTES]
        self._offset += len(piece)
        return ReadResult(done=False, value=piece)

    async def cancel(self, reason: Any = None) -> None:
        self._offset = len(self._data)


class Response:
    """An outgoing response (the SDK's `workers.Response` constructor)."""

    def __init__(
        self,
        body: str | bytes | None = None,
        status: int = 200,
        status_text: str = "",
        headers: Mapping[str, str] | None = None,
        web_socket: Any = None,
    ) -> None:
        self.status = status
        self.status_text = status_text
        self.headers = Headers(headers)
        self.web_socket = web_socket
        if isinstance(body, str):
            self.body = body.encode()
            if "content-type" not in self.headers:
                self.headers["content-type"] = "text/plain;charset=UTF-8"
        else:
            self.body = body or b""

    @property
    def js_object(self) -> Response:
        """On Cloudflare the JS Response (the SDK's public attribute); here the response."""
        return self

    @property
    def webSocket(self) -> Any:
        """The JS Response's client end of an accepted WebSocket (None for other responses)."""
        return self.web_socket

    @classmethod
    def json(
        cls, data: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Response:
        merged = {"content-type": "application/json", **(headers or {})}
        return cls(json.dumps(data), status=status, headers=merged)

    async def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    async def bytes(self) -> bytes:
        """The body (the SDK's fetch responses have this method)."""
        return self.body
