"""The HTTP bounds of both servers' protocols (httptools for the data server, h11 for the
local runtime): late request heads and slow bodies are closed, one address holds a bounded
number of connections, the real data server keeps answering while hundreds of heads hang,
and a flood of loop errors is a few log lines."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from child_processes import listening_socket
from data_server.app import create_app, uvicorn_config
from data_server.http_limits import (
    CONCURRENCY_LIMIT,
    BoundedH11Protocol,
    bounded_httptools,
    rate_limited_loop_errors,
)
from data_server.settings import DataServerSettings
from data_server.store import VaultStore
from tests.support.ports import reserve


def _app() -> Starlette:
    async def ok(_: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def echo(socket: WebSocket) -> None:
        await socket.accept()
        async for text in socket.iter_text():
            await socket.send_text(text)

    async def length(request: Request) -> PlainTextResponse:
        return PlainTextResponse(str(len(await request.body())))

    return Starlette(
        routes=[
            Route("/healthz", ok),
            Route("/length", length, methods=["POST"]),
            WebSocketRoute("/ws", echo),
        ]
    )


def bounded_protocol(kind: str) -> Any:
    """A fresh bounded protocol class (its own connection counts), deadlines shortened."""
    protocol: Any = (
        bounded_httptools() if kind == "httptools" else type("H11", (BoundedH11Protocol,), {})
    )
    protocol.head_seconds = 1.0
    protocol.body_seconds = 1.5
    protocol.per_address = 40
    return protocol


class Served:
    """uvicorn in a thread on a reserved loopback port; stopped on exit."""

    def __init__(self, config: uvicorn.Config, sock: socket.socket) -> None:
        self.server = uvicorn.Server(config)
        self.sock = sock
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture(params=["httptools", "h11"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, type[asyncio.Protocol]]]:
    protocol = bounded_protocol(request.param)
    sock = reserve()
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(_app(), host="127.0.0.1", port=port, http=protocol, log_level="warning")
    with Served(config, sock):
        yield f"http://127.0.0.1:{port}", protocol


@pytest.fixture(params=["httptools", "h11"])
def served_v6(request: pytest.FixtureRequest) -> Iterator[tuple[str, type[asyncio.Protocol]]]:
    protocol = bounded_protocol(request.param)
    try:
        sock = listening_socket("::1", 0)
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(_app(), host="::1", port=port, http=protocol, log_level="warning")
    with Served(config, sock):
        yield f"http://[::1]:{port}", protocol


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


def test_an_ipv6_client_counts_by_its_64(served_v6: tuple[str, Any]) -> None:
    # Loopback has one IPv6 address; what is counted for it is its /64 block, the key every
    # address of that block shares (albert.limits.addresses.address_bucket).
    url, protocol = served_v6
    port = int(url.rsplit(":", 1)[1])
    held = [socket.create_connection(("::1", port), timeout=5) for _ in range(45)]
    try:
        assert sum(closed_by_server(sock) for sock in held[40:]) == 5
        assert set(protocol.open_by_address) == {"::/64"}
    finally:
        for sock in held:
            sock.close()


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


async def test_an_upgraded_socket_outlives_every_http_deadline(
    served: tuple[str, Any],
) -> None:
    """No HTTP deadline reaches a WebSocket: one held over three times the head and body
    deadlines, quiet at first and then talking, stays open and answers every message."""
    from websockets.asyncio.client import connect

    url, protocol = served
    held = 3 * (protocol.head_seconds + protocol.body_seconds)
    async with connect(url.replace("http", "ws") + "/ws") as ws:
        await asyncio.sleep(protocol.body_seconds + 0.5)  # quiet past the body deadline
        answered = 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while loop.time() - started < held:
            await ws.send(f"ping {answered}")
            assert await asyncio.wait_for(ws.recv(), 5) == f"ping {answered}"
            answered += 1
            await asyncio.sleep(0.25)
        assert answered >= 10


def test_a_body_sent_a_byte_at_a_time_is_cut_off_and_a_prompt_one_is_read(
    served: tuple[str, Any],
) -> None:
    url, protocol = served
    port = int(url.rsplit(":", 1)[1])
    slow = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        slow.sendall(b"POST /length HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        started = time.monotonic()
        cut = False
        for _ in range(40):  # a byte every 0.2 s would take 20 s for the whole body
            try:
                slow.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            time.sleep(0.2)
        assert cut or closed_by_server(slow)
        assert time.monotonic() - started < protocol.body_seconds + 4
        assert httpx.post(f"{url}/length", content=b"y" * 100, timeout=5).text == "100"
    finally:
        slow.close()


REQUESTS_PER_MINUTE = 3


@pytest.fixture
def data_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """The real data server app, served with the settings `albert-data serve` uses (the head
    deadline shortened, a per-address rate limit on /mcp and /platform)."""
    protocol = bounded_protocol("httptools")
    protocol.head_seconds = 2.0
    protocol.per_address = 256
    sock = reserve()
    port = int(sock.getsockname()[1])
    settings = DataServerSettings(
        TYPESENSE_URL="http://127.0.0.1:9",
        DATA_SERVER_PORT=port,
        DATA_SERVER_REQUESTS_PER_MINUTE=REQUESTS_PER_MINUTE,
    )
    with VaultStore(tmp_path / "store.sqlite3") as store:
        app = create_app(settings, store=store)
        config = uvicorn_config(
            app, host="127.0.0.1", port=port, http=protocol, log_level="warning"
        )
        assert config.limit_concurrency == CONCURRENCY_LIMIT and config.proxy_headers is False
        with Served(config, sock):
            yield f"http://127.0.0.1:{port}", protocol


def test_the_data_server_answers_others_while_hundreds_of_heads_hang(
    data_server: tuple[str, Any],
) -> None:
    url, protocol = data_server
    port = int(url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        for _ in range(200):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")  # the head never ends
            held.append(sock)
        worst = 0.0
        with httpx.Client(timeout=30) as http:
            for _ in range(10):
                started = time.monotonic()
                assert http.get(f"{url}/readyz").status_code in (200, 503)
                worst = max(worst, time.monotonic() - started)
        assert worst < 5.0, "a generous bound: the machine is shared"
        time.sleep(protocol.head_seconds + 0.5)
        assert all(closed_by_server(sock) for sock in held)
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5
    while protocol.open_by_address and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not protocol.open_by_address


def test_the_data_server_refuses_a_body_framed_twice_and_trusts_no_forwarded_address(
    data_server: tuple[str, Any],
) -> None:
    url, _ = data_server
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        answer = b""
        for _ in range(50):
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert answer.count(b"HTTP/1.1") == 1, "the smuggled request was not answered"
    # Each request claims another forwarded address; the socket's is the one counted.
    with httpx.Client(timeout=10) as http:
        statuses = [
            http.get(
                f"{url}/platform/tokens/search?symbol=PEPE",
                headers={"x-forwarded-for": f"198.51.100.{n}"},
            ).status_code
            for n in range(REQUESTS_PER_MINUTE + 2)
        ]
    assert 429 not in statuses[:REQUESTS_PER_MINUTE] and statuses[-2:] == [429, 429], statuses
