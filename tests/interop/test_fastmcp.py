"""Our MCP client against FastMCP servers (PyPI `fastmcp`, another project's server on the
`mcp` SDK), in every mode it serves: stateful and stateless, JSON and event-stream answers,
and its legacy SSE transport; plus a server that names a tool like a platform tool, one
that answers with structured content only, and restarts that forget our session.

The client side is the manager a chat object uses (`McpManager`), with the server added as
a client's own server (`POST /api/mcp/servers` stores the same config).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.tools import ToolResult

from albert.cloudflare.sql import WorkersSql
from albert.mcp.configs import McpServerIn
from tests.albert.mcp.conftest import fast_settings
from tests.albert.mcp.test_manager import Harness, make, wait_state
from tests.support.asgi_server import AsgiServer

MODES = {
    "stateful-json": {"stateless_http": False, "json_response": True},
    "stateful-sse": {"stateless_http": False, "json_response": False},
    "stateless-json": {"stateless_http": True, "json_response": True},
    "stateless-sse": {"stateless_http": True, "json_response": False},
    "legacy-sse": {"transport": "sse"},
}
STATEFUL = ["stateful-json", "stateful-sse"]
HANDSHAKE_VERSIONS = {b"2024-11-05", b"2025-03-26", b"2025-06-18", b"2025-11-25"}
APY = {"vault": "usdc", "apy": 4.2, "chain": "ethereum"}


def fastmcp_app(mode: str) -> tuple[Any, str]:
    """A small FastMCP server in one transport mode: its ASGI app and its MCP path."""
    server = FastMCP("yields")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool
    def vault_apy(vault: str) -> dict[str, float]:
        """A vault's APY in percent."""
        return {"apy": 4.2 if vault == "usdc" else 0.0}

    @server.tool(name="echo")
    def echo(text: str = "") -> str:
        """Named like a built-in tool of the platform."""
        return f"not the platform's echo: {text}"

    @server.tool
    def apy_table() -> ToolResult:
        """Structured content only: no text block at all."""
        return ToolResult(content=[], structured_content=APY)

    path = "/sse" if mode == "legacy-sse" else "/mcp"
    return server.http_app(path=path, **MODES[mode]), path


def handshake_era(app: Any) -> Any:
    """The app as a server of the 2025 protocols sees the 2026-07-28 probe.

    FastMCP on the `mcp` 2.x SDK speaks the sessionless 2026-07-28 protocol too, so our
    client never holds a session with it. Servers on the 1.x SDKs (FastMCP 2.x, the
    TypeScript SDK 1.x) refuse the `server/discover` probe with 400 "Missing session ID",
    and the client falls back to the initialize handshake and a session: this refuses the
    probe the same way, so FastMCP's own stateful session manager owns the session.
    """

    async def refuse_modern(scope: dict[str, Any], receive: Any, send: Any) -> None:
        version = dict(scope.get("headers") or []).get(b"mcp-protocol-version")
        if scope["type"] != "http" or version is None or version in HANDSHAKE_VERSIONS:
            await app(scope, receive, send)
            return
        body = b'{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,'
        body += b'"message":"Bad Request: Missing session ID"}}'
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return refuse_modern


class FastMcpServer:
    """A FastMCP app under uvicorn on a loopback port; restartable on the same port."""

    def __init__(self, mode: str, *, handshake: bool = False) -> None:
        self.mode = mode
        self.handshake = handshake
        self.port = 0
        self.path = ""
        self._server: AsgiServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self) -> FastMcpServer:
        # A new app each time: a restarted server knows none of the old sessions.
        app, self.path = fastmcp_app(self.mode)
        if self.handshake:
            app = handshake_era(app)
        server = AsgiServer(app, self.port or None, lifespan="on", graceful_shutdown_seconds=1)
        self.port = server.port
        self._server = server.start(timeout=15)
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()


@pytest.fixture
def fastmcp_server(request: pytest.FixtureRequest) -> Iterator[FastMcpServer]:
    mode, _, era = request.param.partition("+")
    server = FastMcpServer(mode, handshake=era == "handshake").start()
    try:
        yield server
    finally:
        server.stop()


async def added(sql: WorkersSql, harness_factory: list[Harness], url: str, **env: str) -> Harness:
    """A manager with `url` added as the client's own server "yields", once it is ready."""
    h = await make(sql, fast_settings(**env))
    harness_factory.append(h)
    h.store.put(McpServerIn(name="yields", url=url))
    await h.manager.reload("yields")
    await wait_state(h.manager, "yields", "ready")
    return h


async def wait_for(check: Any, within: float = 8.0) -> None:
    """Poll `check()` (bounded in time) until it is true."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {within}s")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("fastmcp_server", list(MODES), indirect=True)
async def test_every_mode_lists_calls_and_cannot_take_a_platform_name(
    sql: WorkersSql, harness_factory: list[Harness], fastmcp_server: FastMcpServer
) -> None:
    h = await added(sql, harness_factory, fastmcp_server.url)
    registry = (await h.manager.tools_for_turn()).registry
    assert (await registry.get("add").execute({"a": 2, "b": 40})).joined_text() == "42"
    apy = await registry.get("vault_apy").execute({"vault": "usdc"})
    assert apy.structured == {"apy": 4.2} and "4.2" in apy.joined_text()
    # The platform's built-in `echo` stays; the server's is offered under a prefixed name.
    assert registry.source_of("echo") == "local"
    renamed = await registry.get("yields__echo").execute({"text": "hi"})
    assert renamed.joined_text() == "not the platform's echo: hi"
    [status] = h.manager.status()
    assert status.renamed == ["echo → yields__echo"]
    bad = await registry.get("add").execute({"a": "two", "b": 1})
    assert bad.is_error and "add" in bad.joined_text()


@pytest.mark.parametrize("fastmcp_server", ["stateful-json", "legacy-sse"], indirect=True)
async def test_a_structured_only_result_reaches_the_model_as_json(
    sql: WorkersSql, harness_factory: list[Harness], fastmcp_server: FastMcpServer
) -> None:
    # Issue #33 item 9: once "(the tool returned no text)".
    h = await added(sql, harness_factory, fastmcp_server.url)
    tool = (await h.manager.tools_for_turn()).registry.get("apy_table")
    result = await tool.execute({})
    assert not result.is_error and result.structured == APY
    assert result.joined_text() == '{"vault": "usdc", "apy": 4.2, "chain": "ethereum"}'


@pytest.mark.parametrize(
    "fastmcp_server", [f"{mode}+handshake" for mode in STATEFUL], indirect=True
)
async def test_a_restart_that_forgets_our_session_opens_a_new_one(
    sql: WorkersSql,
    harness_factory: list[Harness],
    fastmcp_server: FastMcpServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Issue #33 item 5: the spec's 404 for an unknown session means "start a new session".
    # A long health cache: nothing but the call itself can notice the forgotten session.
    h = await added(sql, harness_factory, fastmcp_server.url, MCP_HEALTH_CACHE_SECONDS="60")
    add = (await h.manager.tools_for_turn()).registry.get("add")
    assert (await add.execute({"a": 1, "b": 1})).joined_text() == "2"
    fastmcp_server.stop()
    fastmcp_server.start()
    with caplog.at_level(logging.INFO, logger="albert.mcp"):
        again = await add.execute({"a": 2, "b": 2})
    assert not again.is_error and again.joined_text() == "4", again
    # FastMCP's session manager answered 404 "Session not found": the call ran once, on a
    # new session (a non-idempotent tool is never repeated after a dropped call).
    assert "repeated tool add on a new connection" in caplog.text
    await wait_state(h.manager, "yields", "ready")
    [status] = h.manager.status()
    assert status.last_error is None and status.tools == 4
    assert "add" in (await h.manager.tools_for_turn()).registry.names()


@pytest.mark.parametrize("fastmcp_server", STATEFUL, indirect=True)
async def test_a_restart_costs_nothing_on_the_sessionless_protocol(
    sql: WorkersSql,
    harness_factory: list[Harness],
    fastmcp_server: FastMcpServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # FastMCP on the 2.x SDK speaks 2026-07-28 with us: no session to lose.
    h = await added(sql, harness_factory, fastmcp_server.url, MCP_HEALTH_CACHE_SECONDS="60")
    add = (await h.manager.tools_for_turn()).registry.get("add")
    assert (await add.execute({"a": 1, "b": 1})).joined_text() == "2"
    fastmcp_server.stop()
    fastmcp_server.start()
    with caplog.at_level(logging.INFO, logger="albert.mcp"):
        assert (await add.execute({"a": 2, "b": 2})).joined_text() == "4"
    assert "new connection" not in caplog.text
    assert h.manager.status()[0].state == "ready"


@pytest.mark.parametrize("fastmcp_server", ["stateful-sse", "legacy-sse"], indirect=True)
async def test_a_server_down_for_a_while_is_reported_then_picked_up_again(
    sql: WorkersSql, harness_factory: list[Harness], fastmcp_server: FastMcpServer
) -> None:
    h = await added(sql, harness_factory, fastmcp_server.url)
    fastmcp_server.stop()
    # The next turn's health check finds it gone: its tools are not offered, status says why.
    turn = await h.manager.tools_for_turn()
    assert "add" not in turn.registry.names()
    await wait_for(lambda: h.manager.status()[0].state in ("reconnecting", "failed"))
    assert h.manager.status()[0].last_error
    fastmcp_server.start()
    await wait_state(h.manager, "yields", "ready", within=15)
    add = (await h.manager.tools_for_turn()).registry.get("add")
    assert (await add.execute({"a": 20, "b": 22})).joined_text() == "42"
    assert h.manager.status()[0].last_error is None
