"""Request bodies on both runtimes: bounded before and while they are read.

Sent over raw loopback sockets, so heads can say what no HTTP client would: a declared
body far larger than what is sent, a body framed twice, a chunked body that never stops.
The local runtime bounds bodies before the worker runs; on workerd nothing in front of the
worker does, so the adapter bounds them as it reads (albert.request_bodies).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from albert.auth.session_api import MAX_SESSION_BODY
from albert.chat.threads_api import MAX_BODY_BYTES as THREADS_BODY
from albert.request_bodies import MAX_REQUEST_BODY_BYTES
from child_processes import descendants
from tests.support.runtime_process import RuntimeProcess

ANSWER_SECONDS = 5.0
PIECE = b"x" * 16384
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def runtime(
    tmp_path_factory: pytest.TempPathFactory, runtime_kind: str
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp(f"request-bodies-{runtime_kind}")
    variables = {"ALBERT_MODE": "local", "MCP_DEFAULT_SERVER_URL": ""}
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


@pytest.fixture(scope="module")
def token(runtime: RuntimeProcess) -> str:
    made = httpx.post(f"{runtime.url}/api/session", json={}, timeout=30)
    assert made.status_code == 201, made.text
    return str(made.json()["token"])


class Answer:
    """One HTTP response read off a raw socket, and whether the server closed after it."""

    def __init__(self, raw: bytes, closed: bool) -> None:
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/1.1 ") else 0
        self.headers = {
            k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])
        }
        self.closed = closed
        self.raw = raw

    def error(self) -> dict[str, str]:
        return dict(json.loads(self.body))


def read_answer(sock: socket.socket, seconds: float = ANSWER_SECONDS) -> Answer:
    """The server's response (at most `seconds` of waiting), then whether it closed the
    connection: anything after the response would be a second answer, kept in `raw`."""
    raw, closed = b"", False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            piece = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            closed = True
            break
        if not piece:
            closed = True
            break
        raw += piece
        head, sep, body = raw.partition(b"\r\n\r\n")
        length = next(
            (
                int(x.split(b":")[1])
                for x in head.lower().split(b"\r\n")
                if x.startswith(b"content-length:")
            ),
            None,
        )
        if sep and length is not None and len(body) >= length:
            deadline = min(deadline, time.monotonic() + 0.5)  # a close, or a second answer
    return Answer(raw, closed)


def connect(runtime: RuntimeProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", runtime.port), timeout=ANSWER_SECONDS)


def head(path: str, *lines: str) -> bytes:
    return "\r\n".join([f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *lines, "", ""]).encode()


def test_a_declared_256_mib_body_is_refused_by_its_length_with_little_sent(
    runtime: RuntimeProcess, token: str
) -> None:
    for path, auth in (("/api/session", []), ("/api/threads", [f"Authorization: Bearer {token}"])):
        with connect(runtime) as sock:
            sock.sendall(head(path, *auth, "Content-Length: 268435456") + b"x" * 1024)
            answer = read_answer(sock)
        assert answer.status == 413, answer.raw[:300]
        assert answer.error() == {
            "error": "too_large",
            "detail": f"body larger than {MAX_REQUEST_BODY_BYTES} bytes",
        }
        # The rest of the declared body will never be read: the connection ends.
        assert answer.closed


@pytest.mark.parametrize("first", ["content-length", "transfer-encoding"])
def test_a_body_framed_twice_is_never_framed_by_its_length_nor_smuggles_a_request(
    runtime: RuntimeProcess, runtime_kind: str, first: str
) -> None:
    tenant = b'{"tenant":"nope"}'
    framing = ["Content-Length: 5", "Transfer-Encoding: chunked"]
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(tenant), tenant)
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with connect(runtime) as sock:
        sock.sendall(
            head("/api/session", *(framing if first == "content-length" else framing[::-1]))
        )
        sock.sendall(chunked + smuggled)
        answer = read_answer(sock)
    assert answer.status == 400, answer.raw[:300]
    assert answer.raw.count(b"HTTP/1.1 ") == 1, "the smuggled request was answered"
    assert answer.closed
    if runtime_kind == "local":
        # Refused outright, before the worker runs.
        assert answer.error()["error"] == "bad_request"
    else:
        # workerd frames such a request by Transfer-Encoding alone and drops the
        # Content-Length before the worker sees it (RFC 9112 6.1 allows either answer
        # when it then closes the connection): the session route read the whole chunked
        # body, not its first 5 bytes, and refused its tenant.
        assert answer.error()["error"] == "unknown_tenant"


def send_paced(sock: socket.socket, pieces: int) -> int:
    """Send a chunked body of `pieces` PIECEs, one at a time, stopping as soon as the
    server answers; how many bytes of body went. Paced so that the answer is read before
    more of the body is pushed at a server that stopped reading (its close would then
    reset the connection, and a reset may discard the answer)."""
    sent = 0
    for _ in range(pieces):
        ready, _, _ = select.select([sock], [], [], 0.02)
        if ready:
            return sent
        sock.sendall(b"%x\r\n%s\r\n" % (len(PIECE), PIECE))
        sent += len(PIECE)
    sock.sendall(b"0\r\n\r\n")
    return sent


def test_a_chunked_body_over_the_cap_is_refused_as_soon_as_it_passes_it(
    runtime: RuntimeProcess, token: str
) -> None:
    routes = [
        ("/api/session", [], MAX_SESSION_BODY),
        ("/api/threads", [f"Authorization: Bearer {token}"], MAX_REQUEST_BODY_BYTES),
    ]
    pieces = 8 * MIB // len(PIECE)
    for path, auth, cap in routes:
        with connect(runtime) as sock:
            sock.sendall(head(path, *auth, "Transfer-Encoding: chunked"))
            sent = send_paced(sock, pieces)
            answer = read_answer(sock)
        assert answer.status == 413, (path, answer.raw[:300])
        assert answer.error()["error"] == "too_large"
        # Answered while the body was still coming: it was never read whole.
        assert cap < sent < pieces * len(PIECE), (path, sent)
    # The object route's cap is the shared one, wherever the body was read.
    assert answer.error()["detail"] == f"body larger than {MAX_REQUEST_BODY_BYTES} bytes"


def test_bodies_within_the_bound_still_work(runtime: RuntimeProcess, token: str) -> None:
    auth = {"authorization": f"Bearer {token}"}
    with httpx.Client(base_url=runtime.url, timeout=30) as http:
        assert http.post("/api/session", json={}).status_code == 201

        def pieces() -> Iterator[bytes]:
            yield b'{"title": '
            yield b'"chunked"}'

        # No Content-Length: httpx sends a generator's body chunked.
        made = http.post("/api/threads", content=pieces(), headers=auth)
        assert made.status_code == 201, made.text
        assert made.json()["title"] == "chunked"
        # Over the route's own limit but within the bound: the route's own answer.
        big = json.dumps({"title": "x" * (THREADS_BODY + 1000)}).encode()
        assert THREADS_BODY < len(big) < MAX_REQUEST_BODY_BYTES
        refused = http.post("/api/threads", content=big, headers=auth)
        assert refused.status_code == 413
        assert refused.json()["detail"] == f"body larger than {THREADS_BODY} bytes"


def rss_bytes(runtime: RuntimeProcess) -> int:
    """Resident memory of the runtime's processes (workerd's, on workerd), from /proc."""
    assert runtime.pid is not None
    total = 0
    for pid in {runtime.pid} | descendants(runtime.pid):
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            total += next(int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS:"))
    return total * 1024


def push_body(runtime: RuntimeProcess, request_head: bytes, body: bytes) -> None:
    """Push a whole body at once, as a careless client does; whatever the answer."""
    with contextlib.suppress(OSError), connect(runtime) as sock:
        sock.sendall(request_head + body)
        sock.recv(1024)


def test_bodies_pushed_past_the_cap_are_not_held(runtime: RuntimeProcess, token: str) -> None:
    chunk = b"x" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(128)) + b"0\r\n\r\n"
    heads = [
        head("/api/session", "Transfer-Encoding: chunked"),
        head("/api/threads", f"Authorization: Bearer {token}", "Transfer-Encoding: chunked"),
    ]
    # The answer to a body pushed far past the refusal may be lost to the connection's
    # reset (and wrangler dev's proxy answers some with 500): only memory is measured.
    for request_head in heads:
        push_body(runtime, request_head, body)  # warm-up: code paths and pools in place
    before = rss_bytes(runtime)
    with ThreadPoolExecutor(3) as pool:
        for request_head in heads * 2:
            list(pool.map(lambda h: push_body(runtime, h, body), [request_head] * 3))
    # 12 bodies of 8 MiB, three at a time (before: workerd grew by ~2 bytes per byte sent)
    assert rss_bytes(runtime) - before < 32 * MIB
    assert httpx.get(f"{runtime.url}/healthz", timeout=30).status_code == 200
