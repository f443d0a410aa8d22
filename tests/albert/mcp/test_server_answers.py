"""What an MCP server answers, bounded and understood: real SDK servers on loopback.

Bombs and oversized answers are refused before they are parsed (and the event loop stays
free meanwhile), a server that forgot our session gets a new one, results keep what they
carry, a legacy HTTP+SSE server is reached through the SDK's SSE client, and a URL that is
no MCP endpoint, or needs authorization, fails at once for good instead of retrying.
"""

from __future__ import annotations

import asyncio
import logging
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from albert.cloudflare.sql import WorkersSql
from albert.mcp.configs import McpServerIn
from albert.tools.base import ToolResult
from tests.albert.mcp.conftest import fast_settings
from tests.albert.mcp.test_manager import Harness, harness, make, wait_state
from tests.albert.mcp.unruly_server import UnrulyServer
from tests.support.asgi_server import AsgiServer


def texts_of(result: ToolResult) -> list[str]:
    """The text parts of a call's result."""
    return [part.text for part in result.content]


@pytest.fixture
def unruly() -> Iterator[UnrulyServer]:
    with UnrulyServer() as server:
        yield server


@pytest.fixture
def legacy_only() -> Iterator[UnrulyServer]:
    with UnrulyServer(legacy_only=True) as server:
        yield server


async def connection(url: str) -> Any:
    from albert.mcp.connection import McpConnection

    conn = McpConnection("unruly", url, {}, on_lost=lambda _: None, on_tools_changed=lambda: None)
    await conn.connect(within=10)
    return conn


class Ticker:
    """Another client of the same event loop: the longest it waited for a 10 ms sleep."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            started = time.monotonic()
            await asyncio.sleep(0.01)
            self.longest = max(self.longest, time.monotonic() - started)

    def __enter__(self) -> Ticker:
        self._task = asyncio.ensure_future(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


class PeakMemory:
    """The most memory Python objects took at once in the block, above where it began."""

    def __enter__(self) -> PeakMemory:
        tracemalloc.start()
        self._base = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak_bytes = tracemalloc.get_traced_memory()[1] - self._base
        tracemalloc.stop()


def list_calls(server: UnrulyServer) -> int:
    return sum(1 for e in server.state["sent_encoding"] if e)


@pytest.mark.parametrize(
    ("kind", "reason"), [("gzip_bomb", "compressed (gzip)"), ("huge", "over 8192 KiB")]
)
async def test_an_oversized_tool_list_fails_the_server_for_good(
    sql: WorkersSql, harness_factory: list[Harness], unruly: UnrulyServer, kind: str, reason: str
) -> None:
    unruly.state["list"] = kind
    with Ticker() as other:
        h = await harness(sql, harness_factory, unruly.url)
        await wait_state(h.manager, "vaults", "failed")
    [status] = h.manager.status()
    assert status.last_error is not None and reason in status.last_error, status
    # Every request asked for the body as it is; no retry, no half-open attempt follows
    # (the schedule here retries within 0.05 s and half-opens after 0.3 s).
    posts = len(unruly.state["sent_encoding"])
    await asyncio.sleep(1.0)
    await h.manager.tools_for_turn()
    assert len(unruly.state["sent_encoding"]) == posts
    assert set(unruly.state["sent_encoding"]) == {"identity"}
    assert other.longest < 2.0, other.longest


async def test_a_result_of_two_million_parts_is_refused_before_it_is_parsed(
    unruly: UnrulyServer,
) -> None:
    from albert.mcp.connection import AnswerRefused

    conn = await connection(unruly.url)
    try:
        with Ticker() as other, PeakMemory() as memory:
            started = time.monotonic()
            with pytest.raises(AnswerRefused, match="over 2048 KiB"):
                await asyncio.wait_for(conn.call_tool("huge_parts", {}), 20)
            took = time.monotonic() - started
        # Refused after 2 MiB of ~54 MB, never turned into objects: the loop stayed free,
        # and this side held a few MiB for it (the server's own copy is not counted).
        assert took < 10 and other.longest < 2.0, (took, other.longest)
        assert memory.peak_bytes < 32 * 1024 * 1024, memory.peak_bytes
        with pytest.raises(AnswerRefused):
            await conn.call_tool("big", {})
        # The session is fine: the next call is answered.
        assert texts_of(await conn.call_tool("text", {})) == ["plain"]
    finally:
        await conn.close()


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_an_abandoned_call_leaves_the_session_working(json_response: bool) -> None:
    with UnrulyServer(json_response=json_response) as server:
        conn = await connection(server.url)
        try:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(conn.call_tool("slow", {}), 0.2)
            assert texts_of(await conn.call_tool("text", {})) == ["plain"]
            await asyncio.sleep(1.2)  # whatever the server makes of it, it is over by now
            assert server.state["slow_started"] == 1
            assert texts_of(await conn.call_tool("text", {})) == ["plain"]
        finally:
            await conn.close()


async def test_results_keep_structured_content_resources_and_links(unruly: UnrulyServer) -> None:
    conn = await connection(unruly.url)
    try:
        structured = await conn.call_tool("structured_only", {})
        assert texts_of(structured) == ['{"apy": 4.2, "tvl": 10}']
        assert structured.structured == {"apy": 4.2, "tvl": 10}
        texts = texts_of(await conn.call_tool("resources", {}))
        assert texts[0] == "[resource file:///report.md]\n# Report"
        assert texts[1] == "[resource link vault-1 <https://example.org/v/1>]"
        assert texts[2] == "[image content (image/png) omitted: only text reaches the model]"
    finally:
        await conn.close()


async def test_a_forgotten_session_is_reopened_and_the_call_made_once(
    sql: WorkersSql, harness_factory: list[Harness], legacy_only: UnrulyServer
) -> None:
    h = await harness(sql, harness_factory, legacy_only.url, MCP_HEALTH_CACHE_SECONDS="60")
    await wait_state(h.manager, "vaults", "ready")
    assert legacy_only.state["sessions"], "the server gave a session (initialize handshake)"
    turn = await h.manager.tools_for_turn()
    assert (await turn.registry.get("count").execute({})).joined_text() == "1"

    legacy_only.forget_sessions()
    # `count` is not idempotent, yet the call is made again: the server never ran it.
    result = await turn.registry.get("count").execute({})
    assert not result.is_error and result.joined_text() == "2", result
    assert legacy_only.state["counted"] == 2
    await wait_state(h.manager, "vaults", "ready")
    assert len(legacy_only.state["sessions"]) == 2


async def test_a_forgotten_session_seen_by_the_health_check_is_replaced_within_the_turn(
    sql: WorkersSql, harness_factory: list[Harness], legacy_only: UnrulyServer
) -> None:
    h = await harness(sql, harness_factory, legacy_only.url, MCP_RETRY_BASE_SECONDS="0.5")
    await wait_state(h.manager, "vaults", "ready")
    legacy_only.forget_sessions()
    # The health check lists tools, hears 404 for our session, and opens a new one at
    # once: the server answers, so this turn keeps its tools.
    turn = await h.manager.tools_for_turn()
    assert turn.registry.get("count") is not None
    [status] = h.manager.status()
    assert status.state == "ready" and status.last_error is None
    assert (await turn.registry.get("count").execute({})).joined_text() == "1"


def legacy_sse_app() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("legacy")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    return server.sse_app(host="127.0.0.1")


async def test_a_legacy_sse_server_is_reached_through_the_sse_transport(
    sql: WorkersSql, harness_factory: list[Harness]
) -> None:
    served = AsgiServer(legacy_sse_app(), lifespan="on", graceful_shutdown_seconds=1)
    served.start(timeout=15)
    try:
        h = await harness(sql, harness_factory, f"{served.url}/sse")
        await wait_state(h.manager, "vaults", "ready")
        turn = await h.manager.tools_for_turn()
        result = await turn.registry.get("add").execute({"a": 2, "b": 3})
        assert result.joined_text() == "5", result
    finally:
        served.stop()


async def refusing_app(scope: Any, receive: Any, send: Any) -> None:
    """Answers every request with the status its path names (`/401`, `/404`)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    status = int(scope["path"].strip("/"))
    headers = [(b"content-type", b"text/plain")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer resource_metadata="https://a.example/x"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"no"})


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (401, "the server needs authorization (HTTP 401)"),
        (404, "no MCP endpoint at this URL (HTTP 404 to"),
        (405, "no MCP endpoint at this URL (HTTP 405 to"),
    ],
)
async def test_a_refusal_no_retry_can_fix_fails_at_once_for_good(
    sql: WorkersSql, harness_factory: list[Harness], status: int, reason: str
) -> None:
    served = AsgiServer(refusing_app, lifespan="on", graceful_shutdown_seconds=1)
    served.start(timeout=15)
    try:
        h = await harness(sql, harness_factory, f"{served.url}/{status}")
        await wait_state(h.manager, "vaults", "failed")
        [first] = h.manager.status()
        assert first.last_error is not None and first.last_error.startswith(reason), first
        await asyncio.sleep(1.0)  # past several retries and a half-open cool-down
        await h.manager.tools_for_turn()
        [later] = h.manager.status()
        assert later.state == "failed" and later.last_error == first.last_error
        assert await h.alarm.get_alarm() is None, "no retry is planned"
    finally:
        served.stop()


async def test_a_client_server_cannot_take_a_platform_tool_name(
    sql: WorkersSql, harness_factory: list[Harness], legacy_only: UnrulyServer
) -> None:
    h = await make(sql, fast_settings())
    harness_factory.append(h)
    # At 2025-11-25 (the initialize handshake) a tool may say it runs only as a task.
    h.store.put(McpServerIn(name="mine", url=legacy_only.url))
    await h.manager.reload("mine")
    await wait_state(h.manager, "mine", "ready")
    turn = await h.manager.tools_for_turn()
    registry = turn.registry
    # The built-in tools keep their names and stay built in.
    assert registry.source_of("echo") == "local" and registry.source_of("local_only") == "local"
    assert (await registry.get("echo").execute({})).joined_text() == "local echo"
    # The server's clashing tools (exactly, or as gateways fold names) are offered prefixed,
    # a dotted name with the dot replaced; each is called by its own name on the server.
    for offered, own in (
        ("mine__echo", "echo"),
        ("mine__Local-Only", "Local-Only"),
        ("vault_search", "vault.search"),
    ):
        assert registry.source_of(offered) == "mine"
        assert (await registry.get(offered).execute({})).joined_text() == f"remote {own}"
    assert "batch_export" not in registry.names()
    [status] = h.manager.status()
    assert status.renamed == [
        "echo → mine__echo",
        "Local-Only → mine__Local-Only",
        "vault.search → vault_search",
    ]
    assert status.quarantined == [
        'batch_export: it runs only as a task (execution.taskSupport "required"), '
        "which Albert does not run"
    ]
    # The chat names the server: the status frame carries the renames.
    frame = h.hub.socket.frames[-1]
    assert frame["type"] == "mcp_status" and frame["servers"][0]["renamed"] == status.renamed


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_a_servers_log_lines_below_warning_stay_out_of_our_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # At the initialize handshake a server may send every level, whatever was asked for.
    with UnrulyServer(json_response=False, legacy_only=True) as server:
        conn = await connection(server.url)
        try:
            with caplog.at_level(logging.DEBUG, logger="albert.mcp.server"):
                result = await conn.call_tool("chatty", {})
        finally:
            await conn.close()
    assert texts_of(result) == ["said"]
    kept = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "albert.mcp.server"]
    assert kept == [
        (logging.WARNING, "MCP server unruly [warning]: warning line"),
        (logging.ERROR, "MCP server unruly [error]: error line"),
        (logging.CRITICAL, "MCP server unruly [critical]: critical line"),
    ]


@pytest.mark.parametrize("json_response", [False], ids=["sse"])
async def test_progress_a_server_reports_reaches_the_running_call(json_response: bool) -> None:
    from albert.tools.progress import reporting

    # Progress rides on an event stream (a JSON answer has no room for it).
    with UnrulyServer(json_response=json_response) as server:
        conn = await connection(server.url)
        reports: list[tuple[float, float | None, str | None]] = []
        try:
            with reporting(lambda done, total, message: reports.append((done, total, message))):
                result = await conn.call_tool("progressive", {})
            assert texts_of(result) == ["done"]
            assert reports == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            # Outside a call nobody listens, and nothing breaks.
            assert texts_of(await conn.call_tool("progressive", {})) == ["done"]
        finally:
            await conn.close()
