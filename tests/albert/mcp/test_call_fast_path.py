"""The client's own `tools/call` path answers exactly as the SDK's does.

Every case calls a real `mcp`-SDK server on loopback twice, through one `McpConnection`
with the fast path and one without it, and compares the whole `CallToolResult` (its JSON),
what the connection returns, or the exception (type, message, code). The server runs in
both answer modes Streamable HTTP allows: JSON bodies and event streams. A wrapper in front
of it answers a few calls with HTTP errors, as a proxy or an expired deployment would.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert.mcp.call_fast_path import _plain_json
from tests.support.asgi_server import AsgiServer

HUGE = 2_000_000  # above the transport's 1 MiB event limit, far below any body limit
SCHEMA = {
    "type": "object",
    "properties": {"total": {"type": "integer"}, "items": {"type": "array"}},
    "required": ["total", "items"],
}


def _tools() -> list[Any]:
    import mcp_types as types

    def tool(name: str, output: dict[str, Any] | None = None) -> types.Tool:
        return types.Tool(
            name=name,
            description=name,
            input_schema={"type": "object", "additionalProperties": True},
            output_schema=output,
        )

    return [
        tool("structured", SCHEMA),
        tool("mismatch", SCHEMA),
        tool("missing_structured", SCHEMA),
        tool("text"),
        tool("echo"),
        tool("error_result"),
        tool("raises"),
        tool("invalid_args"),
        tool("huge"),
        tool("notifies"),
        tool("slow"),
        tool("http_404"),
        tool("http_500"),
        tool("http_202"),
        tool("http_plain"),
        tool("http_json_error"),
    ]


ROUTED = {"type": "object", "properties": {"region": {"type": "string"}}}
ROUTED_BY_HEADER = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
}


def build_app(json_response: bool, state: dict[str, Any]) -> Any:
    """The SDK's low-level server with the test tools, behind an HTTP-error wrapper."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    tools = _tools()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        # `routed` changes its schema when a test says so: a client that listed it before
        # sends no `Mcp-Param-Region` header, and the server answers HEADER_MISMATCH.
        schema = ROUTED_BY_HEADER if state["routed_by_header"] else ROUTED
        routed = types.Tool(name="routed", description="routed", input_schema=schema)
        return types.ListToolsResult(tools=[*tools, routed])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        name = params.name

        def text(value: str, **extra: Any) -> types.CallToolResult:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=value)], **extra
            )

        if name == "structured":
            page = {"total": 2, "items": [{"id": "a", "apy": 4.25}, {"id": "é", "apy": None}]}
            return text(json.dumps(page), structured_content=page)
        if name == "mismatch":
            return text("{}", structured_content={"total": "two", "items": []})
        if name == "missing_structured":
            return text("no structure")
        if name == "text":
            return text("plain text ✓")
        if name == "routed":
            return text(f"routed to {args.get('region')}")
        if name == "echo":
            return text(json.dumps(args, sort_keys=True), structured_content={"args": args})
        if name == "error_result":
            return text("it failed", is_error=True)
        if name == "raises":
            raise ValueError("the tool broke")
        if name == "invalid_args":
            raise MCPError(code=types.INVALID_PARAMS, message="limit must be a number")
        if name == "huge":
            return text("x" * HUGE)
        if name == "notifies":
            # On this request's own stream (the related id), before its answer.
            await ctx.session.send_notification(
                types.ToolListChangedNotification(), related_request_id=ctx.request_id
            )
            return text("told")
        if name == "slow":
            state["slow_started"] += 1
            try:
                await asyncio.sleep(float(args.get("seconds", 5)))
            except asyncio.CancelledError:
                state["slow_cancelled"] += 1
                raise
            return text("slow done")
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")

    server: Server[Any] = Server(
        "conformance", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    app = server.streamable_http_app(
        streamable_http_path="/mcp", host="127.0.0.1", json_response=json_response
    )
    canned = {
        "http_404": (404, b"text/plain", b"gone"),
        "http_500": (500, b"text/plain", b"boom"),
        "http_202": (202, b"text/plain", b""),
        "http_plain": (200, b"text/plain", b"hello"),
        "http_json_error": (
            400,
            b"application/json",
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad call"}}',
        ),
    }

    async def wrapper(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            name = dict(scope["headers"]).get(b"mcp-name", b"").decode()
            if name in canned:
                status, kind, body = canned[name]
                while (await receive()).get("more_body"):
                    pass
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [(b"content-type", kind)],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
            state["posts"].append(
                {k.decode(): v.decode() for k, v in scope["headers"] if k != b"content-length"}
            )
        await app(scope, receive, send)

    return wrapper


class Served:
    """The app on a free loopback port, in a thread of this process."""

    def __init__(self, json_response: bool) -> None:
        self.state: dict[str, Any] = {
            "posts": [],
            "slow_started": 0,
            "slow_cancelled": 0,
            "routed_by_header": False,
        }
        self.json_response = json_response
        # The MCP app's session manager runs in its lifespan.
        self._server = AsgiServer(
            build_app(json_response, self.state), lifespan="on", graceful_shutdown_seconds=1
        )
        self.url = f"{self._server.url}/mcp"

    def __enter__(self) -> Served:
        self._server.start(timeout=15)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


@pytest.fixture(scope="module", params=[True, False], ids=["json", "sse"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    with Served(json_response=request.param) as server:
        yield server


class Pair:
    """Two connections to one server: the fast path on, and off."""

    def __init__(self, url: str) -> None:
        from albert.mcp.connection import McpConnection

        self.changed = {"fast": 0, "sdk": 0}
        self.fast = McpConnection(
            "fast", url, {}, on_lost=lambda _: None, on_tools_changed=lambda: self._changed("fast")
        )
        self.sdk = McpConnection(
            "sdk",
            url,
            {},
            on_lost=lambda _: None,
            on_tools_changed=lambda: self._changed("sdk"),
            fast_calls=False,
        )

    def _changed(self, which: str) -> None:
        self.changed[which] += 1

    async def __aenter__(self) -> Pair:
        for conn in (self.fast, self.sdk):
            await conn.connect(within=10)
            await conn.list_tools(within=10)
        assert self.fast._fast is not None and self.sdk._fast is None
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.fast.close()
        await self.sdk.close()

    async def both(self, name: str, arguments: dict[str, Any]) -> tuple[Any, Any]:
        """The outcome of each: the result's JSON and the connection's answer, or the error."""
        return await _outcome(self.fast, name, arguments), await _outcome(self.sdk, name, arguments)


async def _outcome(conn: Any, name: str, arguments: dict[str, Any]) -> Any:
    raw: list[Any] = []
    if conn._fast is not None:
        original = conn._fast.call_tool

        async def record(n: str, a: Any) -> Any:
            result = await original(n, a)
            raw.append(result.model_dump_json(by_alias=True))
            return result

        conn._fast.call_tool = record
    else:
        client = conn._client
        original = client.call_tool

        async def record(n: str, a: Any = None, *rest: Any, **kw: Any) -> Any:
            result = await original(n, a, *rest, **kw)
            raw.append(result.model_dump_json(by_alias=True))
            return result

        client.call_tool = record
    try:
        async with asyncio.timeout(20):
            answer = await conn.call_tool(name, arguments)
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc), getattr(exc, "code", None))
    finally:
        if conn._fast is not None:
            conn._fast.call_tool = original
        else:
            conn._client.call_tool = original
    return ("answered", raw, answer.model_dump())


@pytest.fixture
async def pair(served: Served) -> AsyncIterator[Pair]:
    async with Pair(served.url) as connections:
        yield connections


CASES = [
    ("structured", {}),
    ("mismatch", {}),
    ("missing_structured", {}),
    ("text", {}),
    ("echo", {"query": "usdc", "chains": ["base", "ethereum"], "min_apy": 3.5, "none": None}),
    ("error_result", {}),
    ("raises", {}),
    ("invalid_args", {"limit": "ten"}),
    ("not_a_tool", {}),
    ("huge", {}),
    ("http_404", {}),
    ("http_500", {}),
    ("http_202", {}),
    ("http_plain", {}),
    ("http_json_error", {}),
]


@pytest.mark.parametrize(("name", "arguments"), CASES, ids=[c[0] for c in CASES])
async def test_same_outcome_as_the_sdk(pair: Pair, name: str, arguments: dict[str, Any]) -> None:
    fast, sdk = await pair.both(name, arguments)
    assert fast == sdk
    if name in ("structured", "text", "echo", "error_result"):
        assert fast[0] == "answered" and fast[1], "the result itself was compared"


async def test_the_fast_path_is_taken_and_sends_what_the_sdk_sends(
    served: Served, pair: Pair
) -> None:
    posts = served.state["posts"]
    before = len(posts)
    await pair.fast.call_tool("echo", {"q": "a"})
    await pair.sdk.call_tool("echo", {"q": "a"})
    fast_headers, sdk_headers = posts[before:]
    assert fast_headers == sdk_headers
    # Taken: the SDK's client is never asked.
    client = pair.fast._client

    async def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the SDK path ran")

    client.call_tool = refuse
    try:
        assert (await pair.fast.call_tool("text", {})).texts == ["plain text ✓"]
    finally:
        del client.call_tool


async def test_a_header_mismatch_is_recovered_as_the_sdk_recovers(
    served: Served, pair: Pair
) -> None:
    # Both listed `routed` without the header annotation; the server's schema now has it.
    served.state["routed_by_header"] = True
    try:
        posts = served.state["posts"]
        before = len(posts)
        fast, sdk = await pair.both("routed", {"region": "eu"})
        calls = [p for p in posts[before:] if p.get("mcp-name") == "routed"]
    finally:
        served.state["routed_by_header"] = False
    assert fast == sdk
    assert fast[0] == "answered" and fast[2]["texts"] == ["routed to eu"]
    # Each: rejected without the header, re-listed, sent again with it.
    assert [p.get("mcp-param-region") for p in calls] == [None, "eu", None, "eu"]


async def test_notifications_before_the_answer_reach_the_session(
    served: Served, pair: Pair
) -> None:
    fast, sdk = await pair.both("notifies", {})
    assert fast == sdk
    await asyncio.sleep(0.3)  # the session may hand a notification to a task of its own
    # A JSON answer carries no notification; an event stream carries it, to both.
    expected = 0 if served.json_response else 1
    assert pair.changed == {"fast": expected, "sdk": expected}


async def test_cancelled_call_leaves_both_connections_working(served: Served, pair: Pair) -> None:
    state = served.state
    seen = []
    for conn in (pair.sdk, pair.fast):
        before = (state["slow_started"], state["slow_cancelled"])
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(conn.call_tool("slow", {"seconds": 0.6}), 0.2)
        # Whatever the server makes of the abandoned POST, it makes the same of both.
        await asyncio.sleep(0.8)
        seen.append((state["slow_started"] - before[0], state["slow_cancelled"] - before[1]))
        assert (await conn.call_tool("text", {})).texts == ["plain text ✓"]
    assert seen[0] == seen[1]
    assert seen[0][0] == 1


async def test_declines_before_sending_on_a_handshake_era_session(served: Served) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from albert.mcp.call_fast_path import CallFastPath, Declined

    async with httpx2.AsyncClient() as http:
        client = Client(
            streamable_http_client(served.url, http_client=http), cache=None, mode="legacy"
        )
        async with client:
            posts = len(served.state["posts"])
            with pytest.raises(Declined):
                await CallFastPath(client, http, served.url).call_tool("text", {})
            assert len(served.state["posts"]) == posts


class _Without:
    """An SDK object as a changed SDK might have it: one attribute gone, the rest its own."""

    def __init__(self, inner: Any, missing: str, **replaced: Any) -> None:
        self.__dict__.update(_inner=inner, _missing=missing, **replaced)

    def __getattr__(self, name: str) -> Any:
        if name == self.__dict__["_missing"]:
            raise AttributeError(name)
        return getattr(self.__dict__["_inner"], name)


@pytest.mark.parametrize(
    ("owner", "attribute"),
    [
        ("client", "_relist_tool"),
        ("client", "_drive_input_required"),
        ("session", "_stamp"),
        ("session", "_call_tool_adapter"),
        ("session", "_on_notify"),
        ("dispatcher", "_allocate_id"),
        ("dispatcher", "_pending"),
        ("dispatcher", "_dispatch"),
    ],
)
async def test_an_sdk_without_an_internal_it_uses_declines_and_the_sdk_answers(
    served: Served, owner: str, attribute: str
) -> None:
    from albert.mcp.call_fast_path import Declined
    from albert.mcp.connection import McpConnection

    conn = McpConnection(
        "fast", served.url, {}, on_lost=lambda _: None, on_tools_changed=lambda: None
    )
    await conn.connect(within=10)
    try:
        await conn.list_tools(within=10)
        fast = conn._fast
        assert fast is not None
        client = conn._client
        session = client.session
        # The fast path's view of the SDK lacks the attribute; the SDK's own path keeps
        # the real objects.
        if owner == "client":
            fast._client = _Without(client, attribute)
        elif owner == "session":
            fast._client = _Without(client, "", session=_Without(session, attribute))
        else:
            dispatcher = _Without(session._dispatcher, attribute)
            fast._client = _Without(
                client, "", session=_Without(session, "", _dispatcher=dispatcher)
            )
        posts = len(served.state["posts"])
        with pytest.raises(Declined, match=attribute):
            await fast.call_tool("text", {})
        assert len(served.state["posts"]) == posts, "declined before sending"

        async def not_sent(*_: Any) -> Any:
            raise AssertionError("the fast path sent the call")

        fast._send = not_sent
        async with asyncio.timeout(20):
            answer = await conn.call_tool("echo", {"q": "a"})
        assert not answer.is_error and answer.structured is not None
    finally:
        await conn.close()


async def test_an_sdk_without_a_function_it_imports_connects_without_the_path(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    from albert.mcp.connection import McpConnection

    # A failed import of the module, as an SDK without `_clamp_inbound_ttl` would give.
    monkeypatch.setitem(sys.modules, "albert.mcp.call_fast_path", None)
    conn = McpConnection(
        "fast", served.url, {}, on_lost=lambda _: None, on_tools_changed=lambda: None
    )
    await conn.connect(within=10)
    try:
        assert conn._fast is None
        async with asyncio.timeout(20):
            answer = await conn.call_tool("text", {})
        assert answer.texts == ["plain text ✓"]
    finally:
        await conn.close()


async def test_off_switch_setting() -> None:
    from albert.settings import Settings

    assert Settings.from_env({}).mcp_call_fast_path is True
    assert Settings.from_env({"MCP_CALL_FAST_PATH": "false"}).mcp_call_fast_path is False


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5))
def test_arguments_taken_as_they_are_only_when_the_sdk_would_dump_them_unchanged(
    arguments: dict[str, Any],
) -> None:
    import mcp_types as types

    dumped = types.CallToolRequest(
        params=types.CallToolRequestParams(name="t", arguments=arguments)
    ).model_dump(by_alias=True, mode="json", exclude_none=True)["params"]["arguments"]
    if _plain_json(arguments):
        assert json.dumps(dumped) == json.dumps(arguments)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(arguments=st.dictionaries(st.text(max_size=6), json_values, max_size=4))
def test_any_arguments_reach_the_tool_alike(arguments: dict[str, Any], served: Served) -> None:
    async def run() -> tuple[Any, Any]:
        async with Pair(served.url) as connections:
            return await connections.both("echo", arguments)

    fast, sdk = asyncio.run(run())
    assert fast == sdk


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_a_server_gone_mid_session_fails_alike(json_response: bool) -> None:
    outcomes = []
    for fast_calls in (False, True):
        from albert.mcp.connection import McpConnection

        lost = asyncio.Event()
        with Served(json_response) as server:
            conn = McpConnection(
                "gone",
                server.url,
                {},
                on_lost=lambda _conn, lost=lost: lost.set(),
                on_tools_changed=lambda: None,
                fast_calls=fast_calls,
            )
            await conn.connect(within=10)
            await conn.list_tools(within=10)
        try:
            async with asyncio.timeout(20):
                await conn.call_tool("text", {})
        except Exception as exc:
            # The session ends as lost, as when the transport's task group fails.
            await asyncio.wait_for(lost.wait(), 5)
            outcomes.append((type(exc).__name__, str(exc), conn.lost_reason(exc), conn.alive))
        else:
            outcomes.append(("answered",))
        finally:
            await conn.close()
    assert outcomes[0] == outcomes[1], outcomes
