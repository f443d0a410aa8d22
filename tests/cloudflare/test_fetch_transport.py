"""The core's httpx client over the platform's `fetch` (FetchTransport), with JS fakes.

Timeouts and cancellation are checked from the fetch's side: the fake fetch and
its body stream stop only when the request's AbortSignal fires, as the runtime's
do, and cancelling the Python side of a Promise does not stop them
(fakes.python_future). So a test passes only if the transport really aborts.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
import pytest

from albert.cloudflare.fetch import FetchTransport, outbound_client
from albert.outbound.tls import shared_tls_context
from tests.cloudflare import fakes
from tests.cloudflare.test_ai_binding import FakeReadableStream


class FakeHeaders(fakes.JsProxy):
    """A JS Headers object: `entries()` yields [name, value] arrays."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs

    def entries(self) -> Any:
        return iter([fakes.JsArray([k, v]) for k, v in self._pairs])


class FakeFetch(fakes.JsProxy):
    """The global `fetch`: records its calls, answers or rejects."""

    def __init__(
        self, status: int = 200, body: bytes = b"", headers: Any = (), error: str = ""
    ) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.status, self.body, self.headers, self.error = status, body, list(headers), error

    @fakes.js_function
    async def __call__(self, url: str, init: Any) -> Any:
        self.calls.append((url, init))
        if self.error:
            raise fakes.JsException(self.error)
        return fakes.JsObject(
            {
                "status": self.status,
                "headers": FakeHeaders(self.headers),
                "body": FakeReadableStream([self.body[:3], self.body[3:]])
                if self.body
                else fakes.jsnull,
            }
        )


@pytest.fixture(autouse=True)
def js_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, module in fakes.modules().items():
        monkeypatch.setitem(sys.modules, name, module)


async def test_a_json_post_goes_out_as_fetch_and_the_answer_streams_back() -> None:
    answer = json.dumps({"ok": True, "name": "Zoë"}).encode()
    fetch = FakeFetch(
        status=201,
        body=answer,
        headers=[("content-type", "application/json"), ("content-encoding", "gzip")],
    )
    async with httpx.AsyncClient(transport=FetchTransport(fetch)) as client:
        response = await client.post(
            "https://data.albert.example/platform/x", json={"q": 1}, headers={"x-key": "k"}
        )
    assert response.status_code == 201 and response.json() == {"ok": True, "name": "Zoë"}
    # fetch already undid the encoding: httpx must not try to gunzip again.
    assert "content-encoding" not in response.headers
    [(url, init)] = fetch.calls
    assert url == "https://data.albert.example/platform/x"
    assert type(init) is fakes.JsObject and init.method == "POST"
    assert isinstance(init.signal, fakes.AbortSignal) and not init.signal.aborted
    sent_headers = {k.lower(): v for k, v in (pair.to_py() for pair in init.headers)}
    assert sent_headers["x-key"] == "k" and sent_headers["content-type"] == "application/json"
    assert "host" not in sent_headers and "content-length" not in sent_headers
    assert json.loads(init.body.to_bytes()) == {"q": 1}


async def test_a_get_sends_no_body_and_reads_an_empty_answer() -> None:
    fetch = FakeFetch(status=204)
    async with httpx.AsyncClient(transport=FetchTransport(fetch)) as client:
        response = await client.get("https://search.albert.example/health")
    assert response.status_code == 204 and response.content == b""
    assert "body" not in fetch.calls[0][1].object_keys()


async def test_a_rejected_fetch_is_a_connect_error() -> None:
    fetch = FakeFetch(error="TypeError: Network connection lost.")
    async with httpx.AsyncClient(transport=FetchTransport(fetch)) as client:
        with pytest.raises(httpx.ConnectError, match="Network connection lost"):
            await client.get("https://down.example/")


# --- timeouts and cancellation -----------------------------------------------------------


class AbortableReader:
    """A body reader: the chunks, then (if `stall`) nothing until the signal aborts."""

    def __init__(self, chunks: list[bytes], signal: fakes.AbortSignal, stall: bool) -> None:
        self._chunks = list(chunks)
        self._signal = signal
        self._stall = stall
        self.aborted = asyncio.Event()
        signal.addEventListener("abort", lambda _: self.aborted.set())
        self.stalled = asyncio.Event()
        self.fail_with = ""

    @fakes.js_function
    async def read(self) -> fakes.JsObject:
        if self._signal.aborted:
            raise self._signal.reason
        if self.fail_with:
            raise fakes.JsException(self.fail_with)
        if self._chunks:
            return fakes.JsObject({"done": False, "value": fakes.JsUint8Array(self._chunks.pop(0))})
        if not self._stall:
            return fakes.JsObject({"done": True, "value": fakes.jsnull})
        self.stalled.set()
        await self.aborted.wait()
        # An aborted fetch errors its body stream with the signal's reason.
        raise self._signal.reason

    async def cancel(self) -> None:
        self._chunks.clear()


class AbortableBody(fakes.JsProxy):
    def __init__(self, reader: AbortableReader) -> None:
        self.reader = reader

    def getReader(self) -> AbortableReader:
        return self.reader


class SlowFetch(fakes.JsProxy):
    """A server that answers its head after `head_after` seconds (never, if None).

    The pending fetch settles early only when the request's signal aborts, like
    the runtime's. `aborted_during` records whether that happened before the head
    or in the body.
    """

    def __init__(
        self, head_after: float | None, chunks: tuple[bytes, ...] = (), stall_body: bool = False
    ) -> None:
        self.head_after = head_after
        self.chunks = list(chunks)
        self.stall_body = stall_body
        self.started = asyncio.Event()
        self.aborted = asyncio.Event()
        self.aborted_during: list[str] = []
        self.reader: AbortableReader | None = None
        self.signals: list[fakes.AbortSignal] = []

    @fakes.js_function
    async def __call__(self, url: str, init: Any) -> Any:
        signal = init.signal
        self.signals.append(signal)
        signal.addEventListener("abort", lambda _: self.aborted.set())
        self.started.set()
        if self.head_after is None:
            await self.aborted.wait()
        else:
            try:
                await asyncio.wait_for(self.aborted.wait(), self.head_after)
            except TimeoutError:
                pass
        if signal.aborted:
            self.aborted_during.append("head")
            raise signal.reason
        self.reader = AbortableReader(self.chunks, signal, self.stall_body)
        signal.addEventListener("abort", lambda _: self.aborted_during.append("body"))
        return fakes.JsObject(
            {"status": 200, "headers": FakeHeaders([]), "body": AbortableBody(self.reader)}
        )


async def _seen(event: asyncio.Event, seconds: float = 5.0) -> bool:
    try:
        await asyncio.wait_for(event.wait(), seconds)
    except TimeoutError:
        return False
    return True


async def test_no_response_head_within_connect_plus_read_aborts_the_fetch() -> None:
    fetch = SlowFetch(head_after=None)
    timeout = httpx.Timeout(5.0, connect=0.1, read=0.2)
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=timeout) as client:
        with pytest.raises(httpx.ReadTimeout, match="response head"):
            await client.get("https://slow.example/")
    assert await _seen(fetch.aborted), "the fetch was never aborted"
    assert fetch.aborted_during == ["head"]


async def test_a_head_within_connect_plus_read_is_not_aborted() -> None:
    # 0.7 s is past either timeout alone but within both together.
    fetch = SlowFetch(head_after=0.7, chunks=(b"ok",))
    timeout = httpx.Timeout(5.0, connect=0.5, read=0.5)
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=timeout) as client:
        response = await client.get("https://slow.example/")
    assert response.content == b"ok"
    assert not fetch.signals[0].aborted and fetch.aborted_during == []


async def test_without_a_read_timeout_the_head_is_awaited_as_long_as_it_takes() -> None:
    fetch = SlowFetch(head_after=0.3, chunks=(b"late",))
    timeout = httpx.Timeout(None, connect=0.05)
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=timeout) as client:
        response = await client.get("https://slow.example/")
    assert response.content == b"late" and not fetch.signals[0].aborted


async def test_a_body_chunk_later_than_the_read_timeout_aborts_the_fetch() -> None:
    fetch = SlowFetch(head_after=0.0, chunks=(b"first",), stall_body=True)
    timeout = httpx.Timeout(5.0, read=0.2)
    got: list[bytes] = []
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=timeout) as client:
        async with client.stream("GET", "https://slow.example/stream") as response:
            with pytest.raises(httpx.ReadTimeout, match="response body"):
                async for chunk in response.aiter_raw():
                    got.append(chunk)
    assert got == [b"first"]
    assert await _seen(fetch.aborted)
    assert fetch.aborted_during == ["body"]


async def test_cancelling_the_request_while_waiting_for_the_head_aborts_the_fetch() -> None:
    fetch = SlowFetch(head_after=None)
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=None) as client:
        request = asyncio.ensure_future(client.get("https://slow.example/"))
        assert await _seen(fetch.started)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
    assert await _seen(fetch.aborted), "a cancelled request left its fetch running"
    assert fetch.aborted_during == ["head"]


async def test_cancelling_while_reading_the_body_aborts_the_fetch() -> None:
    fetch = SlowFetch(head_after=0.0, chunks=(b"first",), stall_body=True)

    async def read_all(client: httpx.AsyncClient) -> None:
        async with client.stream("GET", "https://slow.example/stream") as response:
            async for _ in response.aiter_raw():
                pass

    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=None) as client:
        reading = asyncio.ensure_future(read_all(client))
        assert await _seen(fetch.started)
        for _ in range(500):
            if fetch.reader is not None and fetch.reader.stalled.is_set():
                break
            await asyncio.sleep(0.01)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
    assert await _seen(fetch.aborted)
    assert fetch.aborted_during == ["body"]


async def test_closing_a_response_before_its_end_aborts_the_fetch() -> None:
    fetch = SlowFetch(head_after=0.0, chunks=(b"first", b"second"), stall_body=True)
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=None) as client:
        async with client.stream("GET", "https://slow.example/stream") as response:
            async for chunk in response.aiter_raw():
                assert chunk == b"first"
                break
    assert await _seen(fetch.aborted)


async def test_a_fully_read_response_is_not_aborted() -> None:
    fetch = SlowFetch(head_after=0.0, chunks=(b"a", b"b"))
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=1.0) as client:
        response = await client.get("https://fast.example/")
    assert response.content == b"ab"
    assert not fetch.signals[0].aborted


async def test_each_request_has_its_own_controller() -> None:
    fetch = SlowFetch(head_after=0.0, chunks=(b"x",))
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=1.0) as client:
        await client.get("https://fast.example/1")
        await client.get("https://fast.example/2")
    first, second = fetch.signals
    assert first is not second


async def test_a_body_stream_that_errors_is_a_read_error() -> None:
    fetch = SlowFetch(head_after=0.0, chunks=(b"first",), stall_body=True)
    async with httpx.AsyncClient(transport=FetchTransport(fetch), timeout=None) as client:
        async with client.stream("GET", "https://flaky.example/") as response:
            stream = response.aiter_raw()
            assert await stream.__anext__() == b"first"
            assert fetch.reader is not None
            fetch.reader.fail_with = "TypeError: Network connection lost."
            with pytest.raises(httpx.ReadError, match="Network connection lost"):
                await stream.__anext__()


async def test_objects_share_one_pool_and_tls_context_under_cpython() -> None:
    # One pool (and TLS context) per object loaded the CA bundle each time (~0.8 MiB per
    # client) and kept a connection per object to the same gateway.
    from albert.outbound.shared_pool import SharedPoolTransport, close_shared_pool, shared_pool

    first, second = outbound_client(), outbound_client()
    try:
        assert isinstance(first._transport, SharedPoolTransport)  # type: ignore[attr-defined]
        assert isinstance(second._transport, SharedPoolTransport)  # type: ignore[attr-defined]
        assert shared_pool() is shared_pool()
        context = shared_tls_context()
        assert context.verify_mode.name == "CERT_REQUIRED" and context.check_hostname
    finally:
        await first.aclose()
        await second.aclose()
        await close_shared_pool()
