"""The MCP client's plain-HTTP transport: httpx2 requests over the lean asyncio transport.

Raw asyncio TCP servers on 127.0.0.1 say byte for byte what comes back, so each test shows
what an httpx2 caller (the `mcp` SDK) sees: the same responses, streams and error classes
as with httpx2's own transport, and TLS requests left to httpx2's transport.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import httpx
import httpx2
import pytest

from albert.mcp.lean_transport import LeanHttpTransport, twin_error

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """A TCP server on a free loopback port running `handler` per connection."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def url(self, path: str = "/mcp") -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    line, *rest = head[:-4].split(b"\r\n")
    headers = {}
    for raw in rest:
        name, _, value = raw.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readuntil(b"\r\n")
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return line, headers, body


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Keep-alive: each request comes back as JSON, with a header of its own."""
    while True:
        line, headers, body = await read_request(reader)
        payload = json.dumps(
            {"line": line.decode(), "headers": headers, "body": body.decode()}
        ).encode()
        writer.write(
            b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Seen: yes\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
        )
        await writer.drain()


def client(**kwargs: object) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=LeanHttpTransport(httpx2.AsyncHTTPTransport()),
        **kwargs,  # type: ignore[arg-type]
    )


async def test_requests_and_answers_are_the_ones_httpx2_sends_and_reads() -> None:
    async with RawServer(echo) as server:
        async with client(headers={"Authorization": "Bearer t"}) as http:
            for n in range(3):
                response = await http.post(
                    server.url("/mcp?x=1"), json={"n": n}, headers={"Accept": "application/json"}
                )
                assert response.status_code == 201
                assert response.headers["x-seen"] == "yes"
                assert response.http_version == "HTTP/1.1"
                seen = response.json()
                assert seen["line"] == "POST /mcp?x=1 HTTP/1.1"
                assert json.loads(seen["body"]) == {"n": n}
                assert seen["headers"]["authorization"] == "Bearer t"
                assert seen["headers"]["content-type"] == "application/json"
                assert seen["headers"]["host"] == server.url("").removeprefix("http://")
    assert server.connections == 1  # kept alive between requests


async def test_a_streamed_request_body_arrives_whole() -> None:
    async def pieces():
        yield b'{"a":'
        yield b"1}"

    async with RawServer(echo) as server, client() as http:
        response = await http.post(server.url(), content=pieces())
    assert json.loads(response.json()["body"]) == {"a": 1}


async def test_an_event_stream_arrives_piece_by_piece_while_it_is_open() -> None:
    release = asyncio.Event()

    async def stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        event = b"event: message\ndata: {}\n\n"
        writer.write(b"%x\r\n%s\r\n" % (len(event), event))
        await writer.drain()
        await release.wait()
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))
        await writer.drain()

    async with RawServer(stream) as server, client() as http:
        async with http.stream("GET", server.url()) as response:
            chunks = response.aiter_bytes()
            first = await asyncio.wait_for(anext(chunks), 5)
            assert first == b"event: message\ndata: {}\n\n"  # before the stream ended
            release.set()
            rest = [piece async for piece in chunks]
    assert b"".join(rest) == first


async def test_errors_are_httpx2_errors_of_the_same_kind() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(30)

    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
        await writer.drain()

    async with RawServer(silent) as server, client(timeout=httpx2.Timeout(5, read=0.2)) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.get(server.url())
    async with RawServer(cut) as server, client() as http:
        with pytest.raises(httpx2.RemoteProtocolError, match="100 bytes"):
            await http.get(server.url())
    async with RawServer(echo) as server:
        url = server.url()
    async with client() as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get(url)  # nobody listens there any more


async def test_tls_requests_go_to_httpx2s_own_transport() -> None:
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return httpx2.Response(200, text="tls")

    transport = LeanHttpTransport(httpx2.MockTransport(handler))
    async with httpx2.AsyncClient(transport=transport) as http:
        response = await http.get("https://mcp.example.test/mcp")
    assert response.text == "tls"
    assert seen == ["https://mcp.example.test/mcp"]


def _error_classes(base: type) -> list[type]:
    out = [base]
    for sub in base.__subclasses__():
        out += _error_classes(sub)
    return out


@pytest.mark.parametrize(
    "kind",
    [k for k in _error_classes(httpx.RequestError) if k.__module__.startswith("httpx")],
    ids=lambda k: k.__name__,
)
def test_every_httpx_request_error_has_its_httpx2_twin(kind: type[httpx.RequestError]) -> None:
    request = httpx2.Request("GET", "http://127.0.0.1/")
    twin = twin_error(kind("it broke", request=httpx.Request("GET", "http://x/")), request)
    assert type(twin).__name__ == kind.__name__
    assert type(twin).__module__.startswith("httpx2")
    assert str(twin) == "it broke" and twin.request is request
