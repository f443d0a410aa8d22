"""The data server's HTTP bounds (httptools): late request heads are closed, one address
holds a bounded number of connections, and a flood of loop errors is a few log lines."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from data_server.http_limits import bounded_httptools, rate_limited_loop_errors
from tests.support.ports import reserve


def _app() -> Starlette:
    async def ok(_: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def echo(socket: WebSocket) -> None:
        await socket.accept()
        async for text in socket.iter_text():
            await socket.send_text(text)

    return Starlette(routes=[Route("/healthz", ok), WebSocketRoute("/ws", echo)])


@pytest.fixture
def served() -> Iterator[tuple[str, type[asyncio.Protocol]]]:
    protocol: Any = bounded_httptools()
    protocol.head_seconds = 1.0
    protocol.per_address = 40
    sock = reserve()
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(_app(), host="127.0.0.1", port=port, http=protocol, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}", protocol
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes the connection within 3 s (anything it still sends first,
    such as the rest of an answer, is read past)."""
    sock.settimeout(3)
    try:
        for _ in range(100):
            if sock.recv(65536) == b"":
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return False


def test_a_late_head_is_closed_and_a_keep_alive_connection_waits_for_its_next(
    served: tuple[str, type[asyncio.Protocol]],
) -> None:
    url, _ = served
    port = int(url.rsplit(":", 1)[1])
    late = socket.create_connection(("127.0.0.1", port), timeout=5)
    late.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    kept = socket.create_connection(("127.0.0.1", port), timeout=5)
    kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = b""
    while not answer.endswith(b"ok"):  # the whole answer, however it was split
        answer += kept.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200")
    kept.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next head, never finished
    try:
        assert httpx.get(f"{url}/healthz", timeout=5).text == "ok"
        time.sleep(1.5)
        assert closed_by_server(late) and closed_by_server(kept)
    finally:
        late.close()
        kept.close()


def test_one_address_holds_at_most_its_share(served: tuple[str, Any]) -> None:
    url, protocol = served
    port = int(url.rsplit(":", 1)[1])
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(50)]
    try:
        refused = sum(closed_by_server(sock) for sock in held[40:])
        assert refused == 10
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5
    while protocol.open_by_address and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not protocol.open_by_address, "every connection was counted out again"
    assert httpx.get(f"{url}/healthz", timeout=5).text == "ok"


async def test_a_flood_of_loop_errors_is_a_few_lines(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    rate_limited_loop_errors(loop, clock=lambda: now[0])
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            for _ in range(1000):
                loop.call_exception_handler({"message": "socket.accept() out of system resource"})
            now[0] = 11.0
            loop.call_exception_handler({"message": "socket.accept() out of system resource"})
    finally:
        loop.set_exception_handler(before)
    lines = [r.getMessage() for r in caplog.records if "accept" in r.getMessage()]
    assert lines == [
        "socket.accept() out of system resource",
        "socket.accept() out of system resource (and 999 more since the last line)",
    ]


async def test_websockets_leave_the_count_so_many_stay_open(
    served: tuple[str, Any],
) -> None:
    from websockets.asyncio.client import connect

    url, protocol = served
    async with contextlib.AsyncExitStack() as stack:
        sockets = [
            await stack.enter_async_context(connect(url.replace("http", "ws") + "/ws"))
            for _ in range(protocol.per_address + 10)
        ]
        for ws in sockets[-3:]:
            await ws.send("still here")
            assert await asyncio.wait_for(ws.recv(), 5) == "still here"
        assert not protocol.open_by_address  # upgraded: none holds an HTTP slot
    async with httpx.AsyncClient(timeout=5) as http:
        assert (await http.get(f"{url}/healthz")).text == "ok"
