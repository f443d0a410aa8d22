"""Serve any ASGI app with uvicorn on a free loopback port, in a background thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from tests.support.ports import reserve


class AsgiServer:
    """A real HTTP server for a test; stops when the context exits."""

    def __init__(
        self,
        app: Any,
        port: int | None = None,
        *,
        lifespan: str = "off",
        graceful_shutdown_seconds: float | None = None,
    ) -> None:
        self._sock = reserve(port or 0)
        self.port = int(self._sock.getsockname()[1])
        self._server = uvicorn.Server(
            uvicorn.Config(
                app,
                host="127.0.0.1",
                port=self.port,
                log_level="error",
                lifespan=lifespan,
                interface="asgi3",
                timeout_graceful_shutdown=graceful_shutdown_seconds,
            )
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> AsgiServer:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()  # uvicorn closes it too, unless it never started

    def __enter__(self) -> AsgiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
