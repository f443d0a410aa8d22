"""A `tools/call` whose answer never arrives, on both client paths, against a real SDK server.

Two ways an answer goes missing: the server's event stream is cut before the response (a
proxy drops the connection after the first event), and the client gives up the call (its
timeout, a cancelled turn). Each case runs through one `McpConnection` with the fast path
and one without it (`MCP_CALL_FAST_PATH`'s two settings) and asserts the same outcome, and
what the server did of it, on both.

Our connections speak 2026-07-28. At that revision the SDK's server answers a request POST
without a session and without its event store (no event ids, so nothing to resume with
`Last-Event-ID`), acknowledges and drops any client notification, and learns of an
abandoned call only from the closed connection, which cancels the handler in event-stream
mode and not in JSON mode. The tests pin those facts down, so a later SDK that changes
them fails here rather than leaving the two paths apart unnoticed.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.support.asgi_server import AsgiServer
from tests.support.ports import reserve

CUT_MARK = b"tools/list_changed"


class _Store:
    """The SDK's `EventStore` interface over a list, counting what the server stores."""

    def __init__(self) -> None:
        from mcp.server.streamable_http import EventStore

        class Store(EventStore):
            async def store_event(inner, stream_id: Any, message: Any) -> str:
                self.events.append((stream_id, message))
                return str(len(self.events))

            async def replay_events_after(inner, last_event_id: Any, send_callback: Any) -> Any:
                self.replays.append(last_event_id)
                index = int(last_event_id)
                stream = self.events[index - 1][0] if 0 < index <= len(self.events) else None
                for number, (stream_id, message) in enumerate(self.events, start=1):
                    if number > index and stream_id == stream and message is not None:
                        from mcp.server.streamable_http import EventMessage

                        await send_callback(EventMessage(message, str(number)))
                return stream

        self.events: list[tuple[Any, Any]] = []
        self.replays: list[Any] = []
        self.store = Store()


def _app(json_response: bool, state: dict[str, Any], store: _Store) -> Any:
    """The SDK's low-level server (event store, retry hint) with recording tools."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    def tool(name: str) -> types.Tool:
        return types.Tool(name=name, description=name, input_schema={"type": "object"})

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool("cut"), tool("wait"), tool("text")])

    def text(value: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "cut":
            # The first event commits the stream; the proxy drops the connection after it.
            await ctx.session.send_notification(
                types.ToolListChangedNotification(), related_request_id=ctx.request_id
            )
            await asyncio.sleep(0.3)
            return text("finished")
        if params.name == "wait":
            state["started"] += 1
            try:
                # Waits on an event nothing sets: only a cancellation ends it early.
                await asyncio.wait_for(state["release"].wait(), 3.0)
            except asyncio.CancelledError:
                state["cancelled"] += 1
                raise
            except TimeoutError:
                state["ran_out"] += 1
            return text("waited")
        return text("plain")

    server: Any = Server(
        "abandoned", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host="127.0.0.1",
        json_response=json_response,
        event_store=store.store,
        retry_interval=50,
    )

    return app


def _recorded(app: Any, state: dict[str, Any]) -> Any:
    """`app`, with every HTTP request it gets noted: method, MCP method, `Last-Event-ID`."""

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            method = headers.get(b"mcp-method", b"").decode()
            resume = headers.get(b"last-event-id")
            state["requests"].append(
                (scope["method"], method, None if resume is None else resume.decode())
            )
            state["times"].append(time.monotonic())
        await app(scope, receive, send)

    return recording


RETRY_MS = 200


class _Gateway:
    """A gateway in front of the SDK server that makes the `cut` tool's event stream resumable.

    It tags each event of that stream with an id and a `retry:` hint and keeps it, hides the
    client's disconnect from the server (so the tool runs on and its answer is kept), and
    answers a GET with `Last-Event-ID` with the events after that id; or, `refuse` set, with
    405, as the SDK's own server answers any GET at 2026-07-28.
    """

    def __init__(self, app: Any, refuse: bool) -> None:
        self._app = app
        self._refuse = refuse
        self._events: list[bytes] = []
        self._done: asyncio.Event | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or ())
        if scope["type"] == "http" and b"last-event-id" in headers:
            await self._replay(int(headers[b"last-event-id"]), send)
        elif scope["type"] == "http" and headers.get(b"mcp-name") == b"cut":
            await self._tagged(scope, receive, send)
        else:
            await self._app(scope, receive, send)

    async def _tagged(self, scope: Any, receive: Any, send: Any) -> None:
        self._events, done = [], asyncio.Event()
        self._done = done

        async def hidden() -> Any:
            message = await receive()
            if message["type"] == "http.disconnect":
                await asyncio.Event().wait()  # until the server's own task group ends
            return message

        async def tagging(message: Any) -> None:
            if message["type"] == "http.response.body":
                body = message.get("body", b"")
                if body.startswith(b"event:"):
                    self._events.append(body)
                    tag = b"id: %d\r\nretry: %d\r\n" % (len(self._events), RETRY_MS)
                    message = {**message, "body": tag + body}
                if not message.get("more_body", False):
                    done.set()
            try:
                await send(message)
            except OSError:
                pass  # the client is gone; the events are kept for its GET

        await self._app(scope, hidden, tagging)

    async def _replay(self, after: int, send: Any) -> None:
        if self._refuse or self._done is None:
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await asyncio.wait_for(self._done.wait(), 10)
        start = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        for number, body in enumerate(self._events[after:], start=after + 1):
            tag = b"id: %d\r\n" % number
            await send({"type": "http.response.body", "body": tag + body, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


class _Served:
    """The app on a free loopback port, in a thread of this process."""

    def __init__(self, json_response: bool, gateway: str | None = None) -> None:
        self.store = _Store()
        self.state: dict[str, Any] = {
            "requests": [],
            "times": [],
            "started": 0,
            "cancelled": 0,
            "ran_out": 0,
            "release": None,
        }
        app = _app(json_response, self.state, self.store)
        if gateway is not None:
            app = _Gateway(app, refuse=gateway == "refuse")
        # The MCP app's session manager runs in its lifespan.
        self._server = AsgiServer(
            _recorded(app, self.state), lifespan="on", graceful_shutdown_seconds=1
        )
        self.port = self._server.port

    def __enter__(self) -> _Served:
        self._server.start(timeout=15)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


class _CuttingProxy:
    """A loopback TCP proxy that drops a connection right after relaying the marked event."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self.cuts = 0
        self.saw_event_id = False
        self.cut_at: float | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        sock = reserve(0)
        server = await asyncio.start_server(self._accept, sock=sock)
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        finally:
            server.close()
            for writer in self._writers:
                writer.close()
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._upstream)
        self._writers.update((writer, up_writer))

        def close() -> None:
            writer.close()
            up_writer.close()

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, watch: bool) -> None:
            seen = b""
            try:
                for _ in range(100_000):
                    chunk = await src.read(65536)
                    if not chunk:
                        break
                    dst.write(chunk)
                    await dst.drain()
                    if watch:
                        seen = (seen + chunk)[-65536:]
                        if re.search(rb"(^|\n)id:", seen):
                            self.saw_event_id = True
                        if CUT_MARK in seen:
                            self.cuts += 1
                            self.cut_at = time.monotonic()
                            break
            except (ConnectionError, OSError):
                pass
            finally:
                close()

        for task in (
            asyncio.create_task(pump(reader, up_writer, False)),
            asyncio.create_task(pump(up_reader, writer, True)),
        ):
            self._tasks.add(task)


@asynccontextmanager
async def _connection(url: str, fast_calls: bool) -> AsyncIterator[Any]:
    from albert.mcp.connection import McpConnection

    conn = McpConnection(
        "fast" if fast_calls else "sdk",
        url,
        {},
        on_lost=lambda _: None,
        on_tools_changed=lambda: None,
        fast_calls=fast_calls,
    )
    await conn.connect(within=10)
    try:
        await conn.list_tools(within=10)
        assert (conn._fast is not None) is fast_calls
        yield conn
    finally:
        await conn.close()


async def test_a_stream_cut_before_the_answer_fails_alike_and_the_connection_stays() -> None:
    outcomes = []
    with _Served(json_response=False) as served:
        for fast_calls in (False, True):
            proxy = _CuttingProxy(served.port)
            async with proxy.running() as url, _connection(url, fast_calls) as conn:
                before = len(served.state["requests"])
                try:
                    async with asyncio.timeout(20):
                        await conn.call_tool("cut", {})
                except Exception as exc:
                    outcome: Any = (type(exc).__name__, str(exc), getattr(exc, "code", None))
                    lost = conn.lost_reason(exc)
                else:
                    outcome, lost = ("answered",), None
                # Give a resuming client the time its retry hint asks for, and then some.
                await asyncio.sleep(0.3)
                requests = served.state["requests"][before:]
                outcomes.append((outcome, lost, proxy.cuts, proxy.saw_event_id, requests))
                assert (await conn.call_tool("text", {})).texts == ["plain"]
    assert outcomes[0] == outcomes[1], outcomes
    outcome, lost, cuts, saw_event_id, requests = outcomes[0]
    assert cuts == 1
    assert outcome == ("MCPError", "SSE stream ended without a response", -32000)
    assert lost == "connection closed"
    # Nothing to resume from: no event id on the wire, nothing in the event store, and so
    # no GET with `Last-Event-ID`; the one request is the call itself.
    assert not saw_event_id
    assert served.store.events == [] and served.store.replays == []
    assert requests == [("POST", "tools/call", None)]


@pytest.mark.parametrize("gateway", ["replay", "refuse"])
async def test_a_cut_stream_with_event_ids_is_resumed_alike(gateway: str) -> None:
    outcomes = []
    with _Served(json_response=False, gateway=gateway) as served:
        for fast_calls in (False, True):
            proxy = _CuttingProxy(served.port)
            async with proxy.running() as url, _connection(url, fast_calls) as conn:
                before = len(served.state["requests"])
                try:
                    async with asyncio.timeout(20):
                        answer = await conn.call_tool("cut", {})
                except Exception as exc:
                    outcome: Any = (type(exc).__name__, str(exc), getattr(exc, "code", None))
                else:
                    outcome = ("answered", answer.texts, answer.is_error)
                requests = served.state["requests"][before:]
                times = served.state["times"][before:]
                assert proxy.cut_at is not None and len(times) >= 2
                # The first GET waits out the server's `retry:` hint after the cut.
                assert times[1] - proxy.cut_at >= RETRY_MS / 1000
                outcomes.append((outcome, proxy.cuts, proxy.saw_event_id, requests))
                assert (await conn.call_tool("text", {})).texts == ["plain"]
    assert outcomes[0] == outcomes[1], outcomes
    outcome, cuts, saw_event_id, requests = outcomes[0]
    assert cuts == 1 and saw_event_id
    if gateway == "replay":
        assert outcome == ("answered", ["finished"], False)
        assert requests == [("POST", "tools/call", None), ("GET", "", "1")]
    else:
        message = "SSE stream ended and reconnection attempts were exhausted"
        assert outcome == ("MCPError", message, -32000)
        assert requests == [("POST", "tools/call", None), ("GET", "", "1"), ("GET", "", "1")]


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_an_abandoned_call_reaches_the_server_alike(json_response: bool) -> None:
    seen = []
    with _Served(json_response) as served:
        state = served.state
        for fast_calls in (False, True):
            async with _connection(f"http://127.0.0.1:{served.port}/mcp", fast_calls) as conn:
                state["release"] = asyncio.Event()
                counts = (state["started"], state["cancelled"], state["ran_out"])
                before = len(state["requests"])
                task = asyncio.create_task(conn.call_tool("wait", {}))
                await _until(lambda counts=counts: state["started"] > counts[0])
                # The caller gives up; its cancellation must not wait on the server.
                task.cancel()
                started = time.monotonic()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert time.monotonic() - started < 1.0
                await _until(
                    lambda counts=counts: (
                        state["cancelled"] + state["ran_out"] > counts[1] + counts[2]
                    )
                )
                seen.append(
                    (
                        state["cancelled"] - counts[1],
                        state["ran_out"] - counts[2],
                        [method for _, method, _ in state["requests"][before:]],
                    )
                )
                assert (await conn.call_tool("text", {})).texts == ["plain"]
    assert seen[0] == seen[1], seen
    cancelled, ran_out, methods = seen[0]
    # No `notifications/cancelled` is posted at 2026-07-28: the closed response is the signal.
    assert methods == ["tools/call"]
    if json_response:
        # JSON mode handles the request in the ASGI task and does not watch the connection.
        assert (cancelled, ran_out) == (0, 1)
    else:
        assert (cancelled, ran_out) == (1, 0)


async def _until(condition: Any) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)
