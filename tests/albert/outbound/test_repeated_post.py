"""RepeatedPost: the same request on the wire and the same response as `client.stream`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import httpx
import pytest

from albert.outbound.client import RepeatedPost
from tests.support import recording_http

ANSWER = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    b"6\r\ndata: \r\n5\r\nhello\r\n0\r\n\r\n"
)
HEADERS = {"authorization": "Bearer k", "content-type": "application/json"}


def recording_server(
    answer: Callable[[bytes], bytes] = lambda head: ANSWER,
) -> AbstractAsyncContextManager[tuple[str, list[bytes]]]:
    return recording_http.recording_server(answer, "/v1/chat/completions")


_client = recording_http.object_client


async def _read(response: httpx.Response) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return (
        response.status_code,
        response.headers.raw,
        b"".join([piece async for piece in response.aiter_bytes()]),
    )


@pytest.mark.parametrize("kind", ["asyncio", "httpx"])
async def test_the_same_bytes_go_out_and_the_same_response_comes_back(kind: str) -> None:
    timeout = httpx.Timeout(7.0)
    async with recording_server() as (url, seen), _client(kind) as client:
        post = RepeatedPost(client, httpx.URL(url), headers=HEADERS, timeout=timeout)
        for body in (b'{"a":1}', b'{"much":"' + b"longer " * 50 + b'"}'):
            async with client.stream(
                "POST", httpx.URL(url), content=body, headers=HEADERS, timeout=timeout
            ) as response:
                generic = await _read(response)
            async with post.stream(body) as response:
                assert response.request.extensions["timeout"] == timeout.as_dict()
                assert response.request.content == body
                assert await _read(response) == generic
            assert response.is_closed
            assert response.elapsed.total_seconds() >= 0
            assert seen[-1] == seen[-2]
            assert seen[-1].endswith(b"\r\n\r\n" + body)
    assert len(seen) == 4


async def test_changed_client_headers_are_sent() -> None:
    async with recording_server() as (url, seen), _client("asyncio") as client:
        post = RepeatedPost(client, httpx.URL(url), headers=HEADERS, timeout=httpx.Timeout(5))
        async with post.stream(b"{}"):
            pass
        client.headers["x-extra"] = "1"
        async with post.stream(b"{}"):
            pass
    assert b"x-extra" not in seen[0]
    assert b"\r\nx-extra: 1\r\n" in seen[1]


async def test_cookies_are_sent_and_kept_as_by_client_stream() -> None:
    def answer(head: bytes) -> bytes:
        if b"set-me" in head:
            return ANSWER.replace(b"\r\n\r\n", b"\r\nset-cookie: s=1; Path=/\r\n\r\n", 1)
        return ANSWER

    async with recording_server(answer) as (url, seen), _client("asyncio") as client:
        first = RepeatedPost(
            client, httpx.URL(url), headers={**HEADERS, "x-set-me": "1"}, timeout=httpx.Timeout(5)
        )
        post = RepeatedPost(client, httpx.URL(url), headers=HEADERS, timeout=httpx.Timeout(5))
        async with post.stream(b"{}"):
            pass
        async with first.stream(b"{}"):
            pass
        assert dict(client.cookies) == {"s": "1"}
        async with post.stream(b"{}"):
            pass
    assert b"cookie" not in seen[0].lower()
    assert b"\r\nCookie: s=1\r\n" in seen[2]


async def test_a_connection_error_names_the_request() -> None:
    async with recording_server() as (url, _):
        pass  # closed: nothing listens there any more
    async with _client("asyncio") as client:
        post = RepeatedPost(client, httpx.URL(url), headers=HEADERS, timeout=httpx.Timeout(5))
        with pytest.raises(httpx.ConnectError) as caught:
            async with post.stream(b"{}"):
                pass
    assert caught.value.request.url == httpx.URL(url)
