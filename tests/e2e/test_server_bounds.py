"""What a greedy or slow client can hold of `albert serve`: bounded, while others are served.

Each attack runs against the real runtime process over loopback sockets, and a bystander's
`/healthz` must keep answering meanwhile (a generous bound: the machine is shared).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
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
    # Three 8 MiB bodies at once: the process read about 1 MiB of each, no more.
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
