"""The local runtime's asyncio HTTP/1.1 transport against real servers on 127.0.0.1 (plain
and TLS).

The servers are raw asyncio TCP servers, so each test says byte for byte what the
"server" sends: well-formed bodies of every framing, and the malformed, stalled and
closing ones a real network produces.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gzip
import ipaddress
import itertools
import json
import os
import resource
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert.cloudflare.fetch import outbound_client
from albert.outbound.shared_pool import install_object_transport
from miniflare.outbound_transport import (
    AsyncioHttp11Transport,
    SharedTransport,
    _ChunkedDecoder,
    close_shared_pool,
    shared_asyncio_transport,
)
from miniflare.runtime import install_outbound_transport

Handler = Callable[["Exchange"], Awaitable[None]]


class Exchange:
    """One accepted connection, seen from the server's side."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def request(self) -> tuple[bytes, dict[str, str], bytes] | None:
        """The next request's line, headers and body (chunked bodies decoded); None at EOF."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        line, *rest = head[:-4].split(b"\r\n")
        headers = {}
        for raw in rest:
            name, _, value = raw.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b""
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            while True:
                size = int((await self.reader.readuntil(b"\r\n"))[:-2], 16)
                data = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                body += data[:-2]
        return line, headers, body

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def respond(self, body: bytes = b"ok", status: str = "200 OK", extra: str = "") -> None:
        head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
        await self.send(head.encode() + body)


class RawServer:
    """A TCP server on a free loopback port; each connection runs `handler`."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.closed_by_client = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{host}:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await self.handler(Exchange(reader, writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            self.closed_by_client += 1
        except asyncio.CancelledError:
            pass  # stopped by __aexit__ (a cancelled handler task makes asyncio log an error)
        finally:
            writer.close()

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()


async def answer_each(exchange: Exchange) -> None:
    """Keep-alive server: echoes each request as JSON, until the client closes."""
    while (request := await exchange.request()) is not None:
        line, headers, body = request
        payload = {"line": line.decode(), "headers": headers, "body": body.decode()}
        await exchange.respond(
            json.dumps(payload).encode(), extra="Content-Type: application/json\r\n"
        )


def transport(**limits: float) -> AsyncioHttp11Transport:
    return AsyncioHttp11Transport(**limits)  # type: ignore[arg-type]


def open_connections(t: AsyncioHttp11Transport) -> int:
    return t._pool().open


async def test_content_length_bodies_and_keep_alive_reuse() -> None:
    t = transport()
    async with RawServer(answer_each) as server, httpx.AsyncClient(transport=t) as client:
        first = await client.post(
            server.url("/v1/chat?x=1"), json={"q": "é"}, headers={"authorization": "Bearer s"}
        )
        second = await client.get(server.url("/again"))
    assert first.status_code == 200
    echoed = first.json()
    assert echoed["line"] == "POST /v1/chat?x=1 HTTP/1.1"
    assert echoed["headers"]["authorization"] == "Bearer s"
    assert json.loads(echoed["body"]) == {"q": "é"}
    assert second.json()["line"] == "GET /again HTTP/1.1"
    assert server.connections == 1  # the second request reused the first connection
    assert first.http_version == "HTTP/1.1" and first.reason_phrase == "OK"


async def test_chunked_body_in_tiny_writes_with_extensions_and_trailers() -> None:
    pieces = [b"data: one\n\n", b"data: two\n\n", b"x" * 70_000]

    async def chunked(exchange: Exchange) -> None:
        while await exchange.request() is not None:
            await exchange.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            wire = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces)
            wire += b"0\r\nX-Trailer: yes\r\n\r\n"
            for i in range(0, 203, 7):  # the head of the body arrives a few bytes at a time
                await exchange.send(wire[i : i + 7])
            await exchange.send(wire[203:])

    async with RawServer(chunked) as server, httpx.AsyncClient(transport=transport()) as client:
        async with client.stream("GET", server.url()) as response:
            body = b"".join([c async for c in response.aiter_raw()])
        again = await client.get(server.url())
    assert body == b"".join(pieces)
    assert again.content == body
    assert server.connections == 1


async def test_a_close_delimited_body_is_read_to_the_end_and_not_reused() -> None:
    async def close_delimited(exchange: Exchange) -> None:
        await exchange.request()
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of ")
        await exchange.send(b"it")
        exchange.writer.close()

    async with RawServer(close_delimited) as server, httpx.AsyncClient(transport=transport()) as c:
        assert (await c.get(server.url())).text == "all of it"
        assert (await c.get(server.url())).text == "all of it"
    assert server.connections == 2


@pytest.mark.parametrize(
    ("head", "reused"),
    [
        ("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", False),
        ("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n", False),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", True),
    ],
)
async def test_reuse_follows_the_response_version_and_connection_header(
    head: str, reused: bool
) -> None:
    async def respond(exchange: Exchange) -> None:
        while await exchange.request() is not None:
            await exchange.send(head.encode() + b"ok")

    async with RawServer(respond) as server, httpx.AsyncClient(transport=transport()) as c:
        for _ in range(2):
            assert (await c.get(server.url())).text == "ok"
    assert server.connections == (1 if reused else 2)


async def test_no_body_for_head_204_and_304() -> None:
    async def respond(exchange: Exchange) -> None:
        statuses = iter(["200 OK", "204 No Content", "304 Not Modified"])
        while await exchange.request() is not None:
            # A HEAD answer names the length of the body it does not send.
            await exchange.send(f"HTTP/1.1 {next(statuses)}\r\nContent-Length: 9\r\n\r\n".encode())

    async with RawServer(respond) as server, httpx.AsyncClient(transport=transport()) as c:
        assert (await c.head(server.url())).content == b""
        assert (await c.get(server.url())).status_code == 204
        assert (await c.get(server.url())).status_code == 304
    assert server.connections == 1


async def test_a_compressed_body_is_passed_up_for_httpx_to_decode() -> None:
    text = "déjà vu " * 1000

    async def gzipped(exchange: Exchange) -> None:
        _, headers, _ = await exchange.request() or (b"", {}, b"")
        assert "gzip" in headers["accept-encoding"]
        await exchange.respond(gzip.compress(text.encode()), extra="Content-Encoding: gzip\r\n")

    async with RawServer(gzipped) as server, httpx.AsyncClient(transport=transport()) as c:
        assert (await c.get(server.url())).text == text


async def test_an_interim_100_response_is_skipped() -> None:
    async def respond(exchange: Exchange) -> None:
        await exchange.request()
        await exchange.send(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n")
        await exchange.send(b"Content-Length: 4\r\n\r\ndone")

    async with RawServer(respond) as server, httpx.AsyncClient(transport=transport()) as c:
        response = await c.post(server.url(), content=b"x")
    assert (response.status_code, response.text) == (201, "done")


async def test_a_streamed_request_body_goes_out_chunked() -> None:
    async def upload() -> AsyncIterator[bytes]:
        for part in (b"first ", b"", b"second"):
            yield part

    async with RawServer(answer_each) as server, httpx.AsyncClient(transport=transport()) as c:
        echoed = (await c.post(server.url(), content=upload())).json()
    assert echoed["headers"]["transfer-encoding"] == "chunked"
    assert echoed["body"] == "first second"


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def once_then_close(exchange: Exchange) -> None:
        await exchange.request()
        await exchange.respond(b"ok")
        exchange.writer.close()  # the server's keep-alive timeout, right after answering

    t = transport()
    async with RawServer(once_then_close) as server, httpx.AsyncClient(transport=t) as client:
        assert (await client.get(server.url())).text == "ok"
        for _ in range(100):  # until the client side has seen the close
            if open_connections(t) == 0:
                break
            await asyncio.sleep(0.01)
        assert open_connections(t) == 0
        assert (await client.get(server.url())).text == "ok"
    assert server.connections == 2


@contextlib.contextmanager
def descriptors_above_1024() -> Iterator[None]:
    """Hold enough files open that new sockets get descriptors above select()'s FD_SETSIZE.

    A runtime with a thousand objects holds thousands of sockets and SQLite files, so its
    model connections are numbered there.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        if hard != resource.RLIM_INFINITY and hard < 1200:
            pytest.skip(f"this process may not open 1,200 files (hard limit {hard})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        yield
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("above_1024", [False, True], ids=["low fds", "fds above 1024"])
async def test_a_close_the_loop_has_not_read_yet_is_seen_before_reuse(above_1024: bool) -> None:
    # A server in a thread answers once per connection and closes it, while the client's
    # loop is busy (blocked here): the close is on the socket, not yet in the protocol.
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    try:
        with descriptors_above_1024() if above_1024 else contextlib.nullcontext():
            async with httpx.AsyncClient(transport=transport()) as client:
                assert (await client.get(url)).text == "ok"
                time.sleep(0.2)  # noqa: ASYNC251 - keeps the loop from reading the close
                assert (await client.get(url)).text == "ok"
    finally:
        thread.join(timeout=10)
        listener.close()
    assert not thread.is_alive()


async def test_connections_are_reused_when_the_process_has_over_1024_files_open() -> None:
    # The check of an idle connection must still tell an open one from a closed one there.
    with descriptors_above_1024():
        t = transport()
        async with RawServer(answer_each) as server, httpx.AsyncClient(transport=t) as client:
            for _ in range(3):
                assert (await client.get(server.url())).status_code == 200
            idle = t._pool()._idle[(b"http", "127.0.0.1", server.port)][0].transport
            assert idle is not None
            assert idle.get_extra_info("socket").fileno() >= 1024
        assert server.connections == 1


async def test_expired_idle_connections_are_replaced() -> None:
    t = transport(keepalive_expiry=0.0)
    async with RawServer(answer_each) as server, httpx.AsyncClient(transport=t) as client:
        await client.get(server.url())
        await client.get(server.url())
    assert server.connections == 2


def _malformed(wire: bytes) -> Handler:
    async def respond(exchange: Exchange) -> None:
        await exchange.request()
        await exchange.send(wire)
        exchange.writer.close()

    return respond


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"", "Server disconnected without sending a response"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "in the middle of the response head"),
        (b"SMTP ready\r\n\r\n", "not an HTTP/1.x status line"),
        (b"HTTP/1.1 2x0 OK\r\n\r\n", "bad status code"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "5 of 10 bytes missing"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not hexadecimal"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\n", "not hexadecimal"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY\r\n", "CRLF"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "incomplete chunked"),
        (b"HTTP/1.1 200 OK\r\n" + b"X-Big: " + b"a" * 70_000, "response head is over"),
    ],
)
async def test_malformed_responses_are_clear_protocol_errors(wire: bytes, message: str) -> None:
    t = transport()
    async with RawServer(_malformed(wire)) as server, httpx.AsyncClient(transport=t) as client:
        with pytest.raises(httpx.RemoteProtocolError, match=message):
            await client.get(server.url())
        assert open_connections(t) == 0


async def test_nothing_listening_is_a_connect_error() -> None:
    async with RawServer(answer_each) as server:
        url = server.url()
    async with httpx.AsyncClient(transport=transport()) as client:
        with pytest.raises(httpx.ConnectError, match="cannot connect"):
            await client.get(url)


async def test_read_timeouts_for_the_head_and_for_a_stalled_body() -> None:
    stall = asyncio.Event()

    async def slow(exchange: Exchange) -> None:
        await exchange.request()
        if not stall.is_set():
            stall.set()
            await asyncio.sleep(30)  # never answers
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
        await asyncio.sleep(30)

    t = transport()
    async with RawServer(slow) as server, httpx.AsyncClient(transport=t, timeout=0.2) as client:
        with pytest.raises(httpx.ReadTimeout, match="no response within"):
            await client.get(server.url())
        async with client.stream("GET", server.url()) as response:
            with pytest.raises(httpx.ReadTimeout, match="no response data"):
                await response.aread()
        assert open_connections(t) == 0


async def test_a_tls_handshake_that_never_finishes_is_a_connect_timeout() -> None:
    async def silent(exchange: Exchange) -> None:
        await asyncio.sleep(30)

    async with RawServer(silent) as server:
        async with httpx.AsyncClient(transport=transport(), timeout=0.3) as client:
            with pytest.raises(httpx.ConnectTimeout):
                await client.get(f"https://127.0.0.1:{server.port}/")


async def test_a_full_pool_waits_then_times_out_and_frees_its_place() -> None:
    release = asyncio.Event()

    async def held(exchange: Exchange) -> None:
        while await exchange.request() is not None:
            await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab")
            await release.wait()
            await exchange.send(b"cd")

    t = transport(max_connections=1)
    async with RawServer(held) as server, httpx.AsyncClient(transport=t) as client:
        async with client.stream("GET", server.url()) as busy:
            with pytest.raises(httpx.PoolTimeout):
                await client.get(server.url(), timeout=httpx.Timeout(5, pool=0.1))
            waiting = asyncio.create_task(client.get(server.url()))
            await asyncio.sleep(0.05)
            release.set()
            assert await busy.aread() == b"abcd"
        assert (await waiting).content == b"abcd"
    assert server.connections == 1


async def test_cancelling_a_reader_mid_body_closes_and_frees_the_connection() -> None:
    async def endless(exchange: Exchange) -> None:
        while await exchange.request() is not None:
            await exchange.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            while True:
                await exchange.send(b"5\r\nhello\r\n")
                await asyncio.sleep(0.01)

    t = transport(max_connections=1)
    first_piece = asyncio.Event()

    async def read_forever(client: httpx.AsyncClient, url: str) -> None:
        async with client.stream("GET", url) as response:
            async for _ in response.aiter_bytes():
                first_piece.set()

    async with RawServer(endless) as server, httpx.AsyncClient(transport=t) as client:
        reader = asyncio.create_task(read_forever(client, server.url()))
        await asyncio.wait_for(first_piece.wait(), 5)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert open_connections(t) == 0
        # The one place in the pool is free again: a new request gets a new connection.
        async with client.stream("GET", server.url()) as response:
            assert (await response.aiter_bytes().__anext__()).startswith(b"hello")
        for _ in range(100):
            if server.closed_by_client == 2:
                break
            await asyncio.sleep(0.01)
    assert server.connections == 2
    assert server.closed_by_client == 2


async def test_leaving_a_body_early_closes_the_connection() -> None:
    async def big(exchange: Exchange) -> None:
        while await exchange.request() is not None:
            await exchange.respond(b"x" * 1_000_000)

    t = transport()
    async with RawServer(big) as server, httpx.AsyncClient(transport=t) as client:
        async with client.stream("GET", server.url()) as response:
            async for _ in response.aiter_raw():
                break
        assert open_connections(t) == 0
        assert len((await client.get(server.url())).content) == 1_000_000
    assert server.connections == 2


def _self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "albert test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_tls_with_sni_and_verification(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    names: list[str | None] = []
    server_tls.sni_callback = lambda _sock, name, _ctx: names.append(name)  # type: ignore[assignment,misc,func-returns-value]
    trusting = ssl.create_default_context(cafile=str(cert))

    async with RawServer(answer_each, tls=server_tls) as server:
        async with httpx.AsyncClient(transport=AsyncioHttp11Transport(trusting)) as client:
            first = await client.get(server.url("/a", host="localhost"))
            second = await client.get(server.url("/b", host="localhost"))
        assert first.json()["line"] == "GET /a HTTP/1.1"
        assert second.status_code == 200
        assert server.connections == 1
        assert names == ["localhost"]
        # The default context trusts public CAs only: a self-signed server is refused.
        async with httpx.AsyncClient(transport=AsyncioHttp11Transport()) as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(server.url(host="localhost"))


@pytest.fixture
def runtime_transport() -> Iterator[None]:
    """The objects' transport as the local runtime installs it, for one test."""
    install_outbound_transport()
    yield
    install_object_transport(None)


@pytest.mark.usefixtures("runtime_transport")
async def test_objects_share_one_pool_but_not_cookies_or_closing() -> None:
    async def cookie_server(exchange: Exchange) -> None:
        while (request := await exchange.request()) is not None:
            _, headers, _ = request
            cookie = headers.get("cookie", "")
            await exchange.respond(cookie.encode(), extra="Set-Cookie: who=first\r\n")

    async with RawServer(cookie_server) as server:
        first, second = outbound_client(), outbound_client()
        assert isinstance(first._transport, SharedTransport)
        await first.get(server.url())
        assert (await first.get(server.url())).text == "who=first"
        await first.aclose()  # one object closing leaves the pool to the others
        assert (await second.get(server.url())).text == ""  # its own cookie jar
        await second.aclose()
        assert server.connections == 1
    for _ in range(100):  # the server closed the idle connection on its way out
        if shared_asyncio_transport()._pool().open == 0:
            break
        await asyncio.sleep(0.01)
    assert shared_asyncio_transport()._pool().open == 0


@pytest.mark.usefixtures("runtime_transport")
async def test_closing_the_shared_pool_lets_its_loop_go_and_a_later_request_opens_anew() -> None:
    async def ok(exchange: Exchange) -> None:
        while await exchange.request() is not None:
            await exchange.respond(b"ok")

    loop = asyncio.get_running_loop()
    async with RawServer(ok) as server:
        client = outbound_client()
        assert (await client.get(server.url())).text == "ok"
        await close_shared_pool()
        # The pool held its loop: kept in the mapping, neither would ever be freed.
        assert loop not in shared_asyncio_transport()._pools
        assert (await client.get(server.url())).text == "ok"
        await client.aclose()
        assert server.connections == 2
    await close_shared_pool()


async def test_without_the_runtime_and_behind_a_proxy_objects_use_httpx_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = outbound_client()  # the product's own default: httpx's transport, shared
    assert not isinstance(plain._transport, SharedTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    install_outbound_transport()
    try:
        proxied = outbound_client()
        assert not isinstance(proxied._transport, SharedTransport)
    finally:
        install_object_transport(None)
    await plain.aclose()
    await proxied.aclose()


async def test_unsupported_schemes_and_header_injection_are_refused() -> None:
    async with httpx.AsyncClient(transport=transport()) as client:
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get("ftp://127.0.0.1/")
        with pytest.raises(httpx.LocalProtocolError):
            await client.get("http://127.0.0.1:9/", headers={"x-bad": "a\r\nInjected: 1"})


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.binary(min_size=1, max_size=40), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    crlf=st.booleans(),
)
def test_chunked_decoding_is_independent_of_how_the_bytes_arrive(
    pieces: list[bytes], cuts: list[int], crlf: bool
) -> None:
    end = b"\r\n" if crlf else b"\n"
    wire = b"".join(b"%x" % len(p) + end + p + end for p in pieces) + b"0" + end + end
    decoder = _ChunkedDecoder()
    body = []
    bounds = [0, *sorted(c for c in cuts if c < len(wire)), len(wire)]
    for start, stop in itertools.pairwise(bounds):
        body += decoder.feed(wire[start:stop])
    assert decoder.done and not decoder.leftover
    assert b"".join(body) == b"".join(pieces)
