"""RepeatedGet: the same request on the wire and the same response as `client.request`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import httpx
import pytest

from albert.outbound.client import RepeatedGet
from tests.support import recording_http

ANSWER = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n{"a":1}'
HEADERS = {"x-typesense-api-key": "k", "accept-encoding": "identity"}


def recording_server(
    answer: Callable[[bytes], bytes] = lambda head: ANSWER,
) -> AbstractAsyncContextManager[tuple[str, list[bytes]]]:
    return recording_http.recording_server(answer, "")


_client = recording_http.object_client


def _seen(response: httpx.Response) -> tuple[object, ...]:
    return (
        response.status_code,
        response.headers.raw,
        response.content,
        response.is_closed,
        response.encoding,
        response.request.method,
        response.request.url,
        response.request.headers.raw,
        response.request.extensions,
    )


@pytest.mark.parametrize("kind", ["asyncio", "httpx"])
@pytest.mark.parametrize("timeout", [httpx.Timeout(7.0), 3.5])
async def test_the_same_bytes_go_out_and_the_same_response_comes_back(
    kind: str, timeout: httpx.Timeout | float
) -> None:
    async with recording_server() as (base, seen), _client(kind) as client:
        get = RepeatedGet(client, headers=HEADERS, timeout=timeout)
        for path in ("/a?q=x&filter_by=chain%3A%3Dbase", "/b/c?q=" + "long%20" * 80, "/"):
            generic = await client.request("GET", base + path, headers=HEADERS, timeout=timeout)
            response = await get.get(base + path)
            assert _seen(response) == _seen(generic)
            assert response.elapsed.total_seconds() >= 0
            assert seen[-1] == seen[-2]
            assert seen[-1].startswith(f"GET {path} HTTP/1.1\r\n".encode())
    assert len(seen) == 6


async def test_changed_client_headers_and_another_host_are_sent() -> None:
    async with recording_server() as (base, seen), recording_server() as (other, seen_other):
        async with _client("asyncio") as client:
            get = RepeatedGet(client, headers=HEADERS, timeout=5.0)
            await get.get(base + "/x")
            client.headers["x-extra"] = "1"
            await get.get(base + "/x")
            await get.get(other + "/x")
    assert b"x-extra" not in seen[0]
    assert b"\r\nx-extra: 1\r\n" in seen[1]
    port = other.rsplit(":", 1)[1]
    assert f"\r\nHost: 127.0.0.1:{port}\r\n".encode() in seen_other[0]


async def test_cookies_and_hooks_take_the_generic_path() -> None:
    calls: list[str] = []

    async def hook(request: httpx.Request) -> None:
        calls.append(str(request.url))

    async with recording_server() as (base, seen):
        async with _client("asyncio", cookies={"s": "1"}) as client:
            await RepeatedGet(client, headers=HEADERS, timeout=5.0).get(base + "/x")
        async with _client("asyncio", event_hooks={"request": [hook]}) as client:
            await RepeatedGet(client, headers=HEADERS, timeout=5.0).get(base + "/y")
    assert b"\r\nCookie: s=1\r\n" in seen[0]
    assert calls == [base + "/y"]


async def test_a_connection_error_names_the_request() -> None:
    async with recording_server() as (base, _):
        pass  # closed: nothing listens there any more
    async with _client("asyncio") as client:
        get = RepeatedGet(client, headers=HEADERS, timeout=5.0)
        with pytest.raises(httpx.ConnectError) as caught:
            await get.get(base + "/x")
    assert caught.value.request.url == httpx.URL(base + "/x")


async def test_a_read_timeout_is_httpx_own() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(2)
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with _client("asyncio") as client:
            get = RepeatedGet(client, headers=HEADERS, timeout=httpx.Timeout(0.2))
            with pytest.raises(httpx.ReadTimeout) as caught:
                await get.get(f"http://127.0.0.1:{port}/x")
        assert caught.value.request.url == httpx.URL(f"http://127.0.0.1:{port}/x")
    finally:
        server.close()
        await server.wait_closed()
