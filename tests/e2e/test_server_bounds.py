"""What a greedy or slow client can hold of `albert serve`: bounded, while others are served.

Each attack runs against the real runtime process over loopback sockets, and a bystander's
`/healthz` must keep answering meanwhile (a generous bound: the machine is shared).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from data_server.http_limits import HEAD_SECONDS, WS_FRAGMENTS_PER_MESSAGE
from miniflare.runtime import MAX_REQUEST_BODY_BYTES
from tests.support.chat_client import ChatClient
from tests.support.runtime_process import RuntimeProcess

BYSTANDER_SECONDS = 3.0
SESSIONS = 3


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("server-bounds")
    variables = {
        "ALBERT_MODE": "local",
        "MCP_DEFAULT_SERVER_URL": "",
        "NEW_SESSIONS_PER_IP": str(SESSIONS),
        "NEW_SESSIONS_WINDOW_SECONDS": "3600",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


def raw(runtime: RuntimeProcess, head: bytes, body: bytes = b"", timeout: float = 10) -> bytes:
    """Send a request as bytes on a fresh connection; everything the server sends back."""
    port = int(runtime.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + body)
        answer = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                piece = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not piece:
                break
            answer += piece
        return answer


def healthz_seconds(runtime: RuntimeProcess) -> float:
    started = time.monotonic()
    assert httpx.get(f"{runtime.url}/healthz", timeout=30).status_code == 200
    return time.monotonic() - started


def test_a_body_over_the_bound_is_refused_by_its_length_before_it_is_read(
    runtime: RuntimeProcess,
) -> None:
    head = b"POST /api/threads HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n"
    answer = raw(runtime, head)  # no body is sent at all: the length alone decides
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_body_at_a_routes_own_limit_reaches_the_worker(runtime: RuntimeProcess) -> None:
    from albert.mcp.api import MAX_BODY_BYTES

    token = asyncio.run(_token(runtime))
    body = json.dumps({"name": "x", "url": "https://mcp.example/" + "a" * MAX_BODY_BYTES})
    answer = httpx.post(
        f"{runtime.url}/api/mcp/servers",
        content=body.encode(),
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
        timeout=10,
    )
    # The route's own refusal, naming its limit, not the runtime's (which names the bound).
    assert answer.json()["detail"] == f"body larger than {MAX_BODY_BYTES} bytes", answer.text
    assert len(body) < MAX_REQUEST_BODY_BYTES


def test_bodies_that_grow_past_the_bound_are_cut_off(runtime: RuntimeProcess) -> None:
    chunk = b"x" * 65536
    pieces = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(128))  # 8 MiB
    head = b"POST /api/threads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    before = rss_bytes(runtime)

    def one() -> bytes:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            return raw(runtime, head, pieces)
        return b"HTTP/1.1 413 (cut while sending)"

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda _: one(), range(3)))
    assert all(a.startswith(b"HTTP/1.1 413") for a in answers), [a[:40] for a in answers]
    assert 128 * len(chunk) > MAX_REQUEST_BODY_BYTES
    assert healthz_seconds(runtime) < BYSTANDER_SECONDS
    # Three 8 MiB bodies at once: the process read about MAX_REQUEST_BODY_BYTES of each.
    assert rss_bytes(runtime) - before < 32 * 1024 * 1024


def rss_bytes(runtime: RuntimeProcess) -> int:
    """The runtime process's resident memory, from /proc."""
    status = Path(f"/proc/{runtime.pid}/status").read_text()
    [line] = [x for x in status.splitlines() if x.startswith("VmRSS:")]
    return int(line.split()[1]) * 1024


def test_a_body_framed_twice_is_refused_and_the_connection_closed(
    runtime: RuntimeProcess,
) -> None:
    head = (
        b"POST /api/threads HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    answer = raw(runtime, head, b"0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert answer.count(b"HTTP/1.1") == 1, "the smuggled request was not answered"


def test_x_forwarded_for_does_not_pass_for_another_address(runtime: RuntimeProcess) -> None:
    statuses = [
        httpx.post(
            f"{runtime.url}/api/session", headers={"x-forwarded-for": f"198.51.100.{n}"}
        ).status_code
        for n in range(SESSIONS + 2)
    ]
    assert statuses == [201] * SESSIONS + [429, 429]


def test_half_open_heads_are_closed_and_others_stay_served(runtime: RuntimeProcess) -> None:
    port = int(runtime.url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        for _ in range(150):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # the head never ends
            held.append(sock)
        assert healthz_seconds(runtime) < BYSTANDER_SECONDS
        time.sleep(HEAD_SECONDS + 1.5)
        closed = 0
        for sock in held:
            sock.settimeout(2)
            with contextlib.suppress(ConnectionResetError):
                if sock.recv(1024) == b"":
                    closed += 1
                    continue
            closed += 1  # reset: closed as well
        assert closed == len(held)
    finally:
        for sock in held:
            sock.close()


def test_one_address_holds_a_bounded_number_of_connections(runtime: RuntimeProcess) -> None:
    from data_server.http_limits import CONNECTIONS_PER_ADDRESS

    port = int(runtime.url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        for _ in range(CONNECTIONS_PER_ADDRESS + 20):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(0.5)
        # The ones past the cap were closed as they opened.
        refused = 0
        for sock in held[CONNECTIONS_PER_ADDRESS:]:
            sock.settimeout(2)
            try:
                refused += sock.recv(16) == b""
            except (ConnectionResetError, TimeoutError):
                refused += 1
        assert refused >= 20
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert healthz_seconds(runtime) < BYSTANDER_SECONDS


async def test_a_message_in_too_many_fragments_closes_the_socket(runtime: RuntimeProcess) -> None:
    async with ChatClient(runtime.url, runtime.ws_url, token=await _token(runtime)) as client:
        async with connect(
            f"{runtime.ws_url}/api/chat?token={client.token}", open_timeout=10
        ) as ws:
            # Compression is not offered, so a message's size is what crossed the wire.
            assert ws.protocol.extensions == []
            fragments = [json.dumps({"type": "ping"})[i % 10] for i in range(10_000)]
            with pytest.raises(ConnectionClosed) as closed:
                await ws.send(iter(fragments))
                for _ in range(10):
                    await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
            assert closed.value.rcvd.reason == "message in too many fragments"
        # Fewer fragments are one message, as before.
        async with connect(
            f"{runtime.ws_url}/api/chat?token={client.token}", open_timeout=10
        ) as ws:
            text = json.dumps({"type": "ping"})
            await ws.send(iter([text[:3], text[3:8], text[8:]]))
            frames = [json.loads(await asyncio.wait_for(ws.recv(), 10)) for _ in range(2)]
            assert "pong" in [f["type"] for f in frames]
    assert WS_FRAGMENTS_PER_MESSAGE < 10_000
    assert healthz_seconds(runtime) < BYSTANDER_SECONDS


async def _token(runtime: RuntimeProcess) -> str:
    # The address's session budget is spent by the test above: a token made by hand.
    from albert.auth.tokens import issue_token, new_client_id, parse_key
    from tests.support.runtime_process import TEST_SIGNING_KEY

    key = parse_key(TEST_SIGNING_KEY)
    return issue_token(
        key, client_id=new_client_id(), tenant="default", expires_at=2**31, issued_at_ms=0
    )


class Bystander:
    """Another client asking `/healthz` over and over while an attack runs (bounded in count
    and time); `worst` is its slowest answer."""

    def __init__(self, runtime: RuntimeProcess, seconds: float = 60.0) -> None:
        self._url = f"{runtime.url}/healthz"
        self._stop = threading.Event()
        self._seconds = seconds
        self.times: list[float] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + self._seconds
        with httpx.Client(timeout=30) as http:
            for _ in range(2_000):
                if self._stop.is_set() or time.monotonic() > deadline:
                    return
                started = time.monotonic()
                status = http.get(self._url).status_code
                self.times.append(time.monotonic() - started if status == 200 else 99.0)
                self._stop.wait(0.05)

    def __enter__(self) -> Bystander:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=35)

    @property
    def worst(self) -> float:
        return max(self.times)


def ws_open(runtime: RuntimeProcess, token: str, extensions: str = "") -> socket.socket:
    """A WebSocket opened by hand (so frames can be anything); the server's 101 is read."""
    port = int(runtime.url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    offer = f"Sec-WebSocket-Extensions: {extensions}\r\n" if extensions else ""
    sock.sendall(
        (
            f"GET /api/chat?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{offer}\r\n"
        ).encode()
    )
    head = b""
    for _ in range(100):
        if b"\r\n\r\n" in head:
            break
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head[:200]
    assert b"sec-websocket-extensions" not in head.lower(), "compression is never agreed"
    return sock


def ws_frame(opcode: int, payload: bytes, *, fin: bool = True, rsv1: bool = False) -> bytes:
    """A client frame, masked with the all-zero key (so the payload goes as it is)."""
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    n = len(payload)
    if n < 126:
        length = struct.pack("!B", 0x80 | n)
    elif n < 65536:
        length = struct.pack("!BH", 0x80 | 126, n)
    else:
        length = struct.pack("!BQ", 0x80 | 127, n)
    return bytes([first]) + length + b"\0\0\0\0" + payload


def ws_close_code(sock: socket.socket, seconds: float = 10.0) -> int | None:
    """The code of the close frame the server sends (other frames read past), or None when
    the connection ends without one."""
    sock.settimeout(seconds)
    data = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            piece = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not piece:
            break
        data += piece
        for _ in range(1_000):  # frames of the answer so far, each at most once
            if len(data) < 2:
                break
            opcode, n = data[0] & 0x0F, data[1] & 0x7F
            start = 2 + {126: 2, 127: 8}.get(n, 0)
            if n >= 126:
                n = int.from_bytes(data[2:start], "big")
            if len(data) < start + n:
                break
            if opcode == 0x8:
                return int.from_bytes(data[start : start + 2], "big")
            data = data[start + n :]
    return None


def send_all_until_closed(sock: socket.socket, data: bytes) -> None:
    """Send what the server will take; it may close (or stop reading) long before the end."""
    sock.settimeout(5)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
        sock.sendall(data)


def attack(runtime: RuntimeProcess, sockets: int, payload: Callable[[], bytes]) -> list[int | None]:
    """Open `sockets` WebSockets and send each `payload()`; the close code each one got."""
    token = asyncio.run(_token(runtime))
    opened = [ws_open(runtime, token, "permessage-deflate") for _ in range(sockets)]
    try:
        with ThreadPoolExecutor(sockets) as pool:
            list(pool.map(lambda s: send_all_until_closed(s, payload()), opened))
            return list(pool.map(ws_close_code, opened))
    finally:
        for sock in opened:
            sock.close()


def test_many_one_byte_fragments_are_refused_while_others_are_served(
    runtime: RuntimeProcess,
) -> None:
    # One text message as a first one-byte frame and 200,000 one-byte continuations
    # (1.4 MB on the wire): the socket is closed after WS_FRAGMENTS_PER_MESSAGE of them.
    fragments = ws_frame(0x1, b"{", fin=False) + ws_frame(0x0, b" ", fin=False) * 200_000
    before = rss_bytes(runtime)
    with Bystander(runtime) as bystander:
        codes = attack(runtime, 4, lambda: fragments)
        time.sleep(0.5)
    assert codes == [1009] * 4
    assert bystander.times and bystander.worst < BYSTANDER_SECONDS * 2, bystander.times
    assert rss_bytes(runtime) - before < 64 * 1024 * 1024


def deflate_bomb(size: int = 16 * 1024 * 1024) -> bytes:
    """A permessage-deflate payload (raw deflate, the 00 00 ff ff tail dropped) that inflates
    to `size` bytes of spaces: ~16 kB for 16 MiB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(b" " * size) + packer.flush(zlib.Z_SYNC_FLUSH)
    return packed.removesuffix(b"\x00\x00\xff\xff")


def test_deflate_bombs_are_not_inflated_while_others_are_served(runtime: RuntimeProcess) -> None:
    bomb = ws_frame(0x1, deflate_bomb(), rsv1=True)
    assert len(bomb) < 64 * 1024
    before = rss_bytes(runtime)
    with Bystander(runtime) as bystander:
        # 4 sockets x 40 bombs of 16 MiB each, compressed though compression was refused:
        # the first one is a protocol error (1002), nothing is inflated.
        codes = attack(runtime, 4, lambda: bomb * 40)
        time.sleep(0.5)
    assert codes == [1002] * 4
    assert bystander.times and bystander.worst < BYSTANDER_SECONDS * 2, bystander.times
    assert rss_bytes(runtime) - before < 64 * 1024 * 1024
