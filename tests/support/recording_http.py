"""A loopback HTTP/1.1 server that keeps every request's bytes, and the outbound clients
the request-shortcut tests compare (`RepeatedPost`, `RepeatedGet`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx

from albert.outbound.asyncio_transport import AsyncioHttp11Transport
from albert.outbound.client import ObjectHttpClient


@asynccontextmanager
async def recording_server(
    answer: Callable[[bytes], bytes], path: str = ""
) -> AsyncIterator[tuple[str, list[bytes]]]:
    """`(url, seen)`: each request's head and body as it came; `answer(head)` is sent back."""
    seen: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                seen.append(head + await reader.readexactly(length))
                writer.write(answer(head))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}{path}", seen
    finally:
        server.close()
        await server.wait_closed()


def object_client(kind: str, **kwargs: object) -> httpx.AsyncClient:
    """An object's outbound client over the project's asyncio transport or httpx's own."""
    if kind == "asyncio":
        return ObjectHttpClient(transport=AsyncioHttp11Transport(), **kwargs)
    return ObjectHttpClient(**kwargs)
