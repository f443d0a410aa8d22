"""The manager against real MCP servers on loopback: connect, merge, drop, recover."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from albert.cloudflare.sql import WorkersSql
from albert.mcp.alarm_port import LoopAlarm
from albert.mcp.config_store import McpConfigStore
from albert.mcp.configs import McpServerIn
from albert.mcp.lazy_connection import connection_module
from albert.mcp.manager import McpManager
from albert.mcp.secret_binding import REFUSAL, SecretBinding, SecretRule, origin_of
from albert.settings import Settings
from albert.tools.base import LocalTool, ToolInput, ToolResult
from albert.tools.guard import ToolGuard
from tests.albert.mcp.conftest import fast_settings, now_ms
from tests.support.mcp_test_server import (
    HUGE_CHARS,
    SEARCH_VAULTS_SCHEMA,
    InProcessMcpServer,
    McpTestServer,
)
from tests.support.tcp_proxy import TcpProxy


class _NoArgs(ToolInput):
    text: str = ""


async def _local(_: BaseModel) -> ToolResult:
    return ToolResult.text("local echo")


LOCAL = [
    LocalTool("echo", "Local echo.", _NoArgs, _local),
    LocalTool("local_only", "Only here.", _NoArgs, _local),
]


@dataclass
class RecordingSocket:
    frames: list[dict] = field(default_factory=list)

    def send(self, text: str) -> None:
        self.frames.append(json.loads(text))

    def close(self, code: int, reason: str) -> None:
        pass


@dataclass
class Hub:
    socket: RecordingSocket = field(default_factory=RecordingSocket)
    open: bool = True  # False: the client has no socket open (nobody watches)

    def sockets(self) -> Sequence[RecordingSocket]:
        return [self.socket] if self.open else []


@dataclass
class Harness:
    manager: McpManager
    store: McpConfigStore
    hub: Hub
    alarm: LoopAlarm


async def make(
    sql: WorkersSql, settings: Settings, secrets: SecretBinding | None = None
) -> Harness:
    store = McpConfigStore(sql, settings, now_ms)
    alarm = LoopAlarm()
    hub = Hub()
    manager = McpManager(
        store=store,
        settings=settings,
        local_tools=LOCAL,
        alarms=alarm,
        secrets=secrets or SecretBinding({}, "default", lambda _name: None),
        hub=hub,
    )
    alarm.bind(manager.on_alarm)
    return Harness(manager, store, hub, alarm)


async def wait_state(manager: McpManager, name: str, state: str, within: float = 8.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if any(s.name == name and s.state == state for s in manager.status()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} not {state} within {within}s: {manager.status()}")


async def harness(
    sql: WorkersSql, made: list[Harness], url: str, name: str = "vaults", **env: str
) -> Harness:
    h = await make(
        sql, fast_settings(MCP_DEFAULT_SERVER_URL=url, MCP_DEFAULT_SERVER_NAME=name, **env)
    )
    made.append(h)
    return h


async def test_remote_tools_are_merged_over_local_ones_with_the_schema_untouched(
    sql: WorkersSql, harness_factory: list[Harness]
) -> None:
    with InProcessMcpServer("generic") as generic:
        h = await harness(
            sql, harness_factory, generic.url, name="utils", MCP_DEFAULT_SERVER_KIND="guess"
        )
        turn = await h.manager.tools_for_turn()
        names = turn.registry.names()
        assert names[:2] == ["echo", "local_only"]  # echo kept its place, now remote
        assert {"huge_report", "slow_tool", "call_count"} <= set(names)
        assert turn.registry.source_of("echo") == "utils"
        assert turn.registry.source_of("local_only") == "local"
        result = await turn.registry.get("echo").execute({"text": "from afar"})
        assert result.joined_text() == "from afar"
        assert not turn.vault_data_available
        assert [n.server for n in turn.server_notes] == ["utils"]
        assert h.hub.socket.frames[-1]["type"] == "mcp_status"
        assert h.hub.socket.frames[-1]["servers"][0]["state"] == "ready"


async def test_vault_server_schema_passes_byte_for_byte_and_huge_results_are_cut(
    sql: WorkersSql, harness_factory: list[Harness], vaults: InProcessMcpServer
) -> None:
    h = await harness(sql, harness_factory, vaults.url)
    turn = await h.manager.tools_for_turn()
    assert turn.vault_data_available
    spec = next(s for s in turn.registry.specs() if s.name == "search_vaults")
    assert json.dumps(spec.parameters) == json.dumps(SEARCH_VAULTS_SCHEMA)
    guard = ToolGuard(timeout_seconds=5, max_chars=50_000)
    outcome = await guard.run(turn.registry.get("huge_report"), {})
    assert outcome.cut is not None and outcome.cut.total == HUGE_CHARS
    assert outcome.shown_text() == "x" * 50_000
    assert "50,000 of" in outcome.cut_note()


async def test_down_at_start_answers_at_once_then_connects_in_the_background(
    sql: WorkersSql, harness_factory: list[Harness], vaults: InProcessMcpServer
) -> None:
    gate = TcpProxy(vaults.port)  # not listening yet: the server is down
    h = await harness(sql, harness_factory, f"http://127.0.0.1:{gate.port}/mcp")
    try:
        started = time.monotonic()
        turn = await h.manager.tools_for_turn()
        assert time.monotonic() - started < 5
        assert turn.registry.names() == ["echo", "local_only"]
        assert not turn.vault_data_available
        assert [s.state for s in h.manager.status()] == ["reconnecting"]
        await gate.start()
        await wait_state(h.manager, "vaults", "ready")
        turn = await h.manager.tools_for_turn()
        assert "search_vaults" in turn.registry.names() and turn.vault_data_available
    finally:
        await gate.stop()


async def test_killed_between_messages_and_mid_call_then_back_without_restarting(
    sql: WorkersSql, harness_factory: list[Harness], killable_vaults: McpTestServer
) -> None:
    vaults = killable_vaults  # a real process, really killed
    h = await harness(sql, harness_factory, vaults.url, MCP_RETRY_ATTEMPTS="20")
    turn = await h.manager.tools_for_turn()
    stale_tool = turn.registry.get("top_yields")
    vaults.stop()
    turn = await h.manager.tools_for_turn()  # the health check notices
    assert "top_yields" not in turn.registry.names()
    assert not turn.vault_data_available
    result = await stale_tool.execute({})
    assert result.is_error and "not connected" in result.joined_text()
    vaults.start()
    await wait_state(h.manager, "vaults", "ready")

    turn = await h.manager.tools_for_turn()
    call = asyncio.ensure_future(turn.registry.get("slow_tool").execute({"seconds": 3}))
    await asyncio.sleep(0.5)
    vaults.stop()
    result = await asyncio.wait_for(call, 5)
    assert result.is_error
    assert "dropped during the call" in result.joined_text()
    vaults.start()
    await wait_state(h.manager, "vaults", "ready")
    turn = await h.manager.tools_for_turn()
    assert "slow_tool" in turn.registry.names()


async def test_retries_exhausted_then_the_alarm_picks_the_server_up_after_the_cool_down(
    sql: WorkersSql, harness_factory: list[Harness], vaults: InProcessMcpServer
) -> None:
    gate = await TcpProxy(vaults.port).start()
    h = await harness(
        sql,
        harness_factory,
        f"http://127.0.0.1:{gate.port}/mcp",
        MCP_RETRY_ATTEMPTS="3",
        MCP_HALF_OPEN_COOLDOWN_SECONDS="1.5",
    )
    try:
        await h.manager.tools_for_turn()
        await gate.stop()  # the server goes away
        await h.manager.tools_for_turn()
        await wait_state(h.manager, "vaults", "failed")
        [status] = h.manager.status()
        # The half-open try is planned, and shown: a socket is open.
        assert status.attempts == 3 and status.next_retry_in_seconds is not None
        assert 0 < status.next_retry_in_seconds <= 1.5
        assert await h.alarm.get_alarm() is not None
        await gate.start()  # ... and comes back; no message is sent from here on
        await wait_state(h.manager, "vaults", "ready", within=10)
        assert h.hub.socket.frames[-1]["servers"][0]["state"] == "ready"
        turn = await h.manager.tools_for_turn()
        assert "search_vaults" in turn.registry.names()
    finally:
        await gate.stop()


async def test_with_no_socket_open_a_failed_server_waits_for_the_next_message(
    sql: WorkersSql, harness_factory: list[Harness], vaults: InProcessMcpServer
) -> None:
    gate = await TcpProxy(vaults.port).start()
    h = await harness(
        sql, harness_factory, f"http://127.0.0.1:{gate.port}/mcp", MCP_RETRY_ATTEMPTS="3"
    )
    h.hub.open = False  # nobody watches: no alarm keeps waking the object for this server
    try:
        await h.manager.tools_for_turn()
        await gate.stop()
        await h.manager.tools_for_turn()
        await wait_state(h.manager, "vaults", "failed")
        assert await h.alarm.get_alarm() is None
        await gate.start()
        await asyncio.sleep(0.6)  # twice the cool-down: still nothing tries
        assert h.manager.status()[0].state == "failed"
        turn = await h.manager.tools_for_turn()  # the next message makes the half-open try
        assert "search_vaults" in turn.registry.names()
        assert h.manager.status()[0].state == "ready"
    finally:
        await gate.stop()


async def test_a_dropped_call_is_replayed_only_for_idempotent_tools(
    sql: WorkersSql, harness_factory: list[Harness], vaults: InProcessMcpServer
) -> None:
    proxy = await TcpProxy(vaults.port).start()
    try:
        h = await harness(sql, harness_factory, f"http://127.0.0.1:{proxy.port}/mcp")
        turn = await h.manager.tools_for_turn()
        before = int((await turn.registry.get("call_count").execute({})).joined_text())
        call = asyncio.ensure_future(turn.registry.get("slow_lookup").execute({"seconds": 0.6}))
        await asyncio.sleep(0.3)
        assert proxy.drop_all() > 0
        result = await asyncio.wait_for(call, 5)
        assert not result.is_error, result
        assert "slow_lookup done" in result.joined_text()

        turn = await h.manager.tools_for_turn()
        call = asyncio.ensure_future(turn.registry.get("slow_tool").execute({"seconds": 0.6}))
        await asyncio.sleep(0.3)
        assert proxy.drop_all() > 0
        result = await asyncio.wait_for(call, 5)
        assert result.is_error and "not repeated" in result.joined_text()
        await wait_state(h.manager, "vaults", "ready")
        turn = await h.manager.tools_for_turn()
        count = await turn.registry.get("call_count").execute({})
        # slow_lookup twice (first try and replay), slow_tool once, call_count itself.
        assert int(count.joined_text()) - before == 4
    finally:
        await proxy.stop()


async def test_a_tool_the_server_no_longer_offers_gives_a_clear_error(
    sql: WorkersSql, harness_factory: list[Harness]
) -> None:
    server = InProcessMcpServer("vaults").start()
    try:
        # The kind is guessed from the tools (the default server's is declared otherwise).
        h = await harness(
            sql,
            harness_factory,
            server.url,
            MCP_RETRY_ATTEMPTS="20",
            MCP_DEFAULT_SERVER_KIND="guess",
        )
        turn = await h.manager.tools_for_turn()
        old = turn.registry.get("search_vaults")
        server.stop()
        server = InProcessMcpServer("files", port=server.port).start()
        await h.manager.tools_for_turn()
        await wait_state(h.manager, "vaults", "ready")
        turn = await h.manager.tools_for_turn()
        assert "read_file" in turn.registry.names() and not turn.vault_data_available
        result = await old.execute({"query": "usdc"})
        assert result.is_error and "no longer offered" in result.joined_text()
    finally:
        server.stop()


async def test_client_configs_with_secret_headers_and_reload(
    sql: WorkersSql, harness_factory: list[Harness], vaults: InProcessMcpServer
) -> None:
    bound = {"MCP_SECRET_T": SecretRule(origins=[origin_of(vaults.url)], tenants=["*"])}
    secrets = SecretBinding(bound, "default", {"MCP_SECRET_T": "t0k"}.get)
    h = await make(sql, fast_settings(), secrets)
    harness_factory.append(h)
    assert (await h.manager.tools_for_turn()).registry.names() == ["echo", "local_only"]
    h.store.put(McpServerIn(name="mine", url=vaults.url, secret_ref="MCP_SECRET_T"))
    await h.manager.reload("mine")
    turn = await h.manager.tools_for_turn()
    # A client's server, offering a platform tool's name: offered under its own prefix.
    assert turn.registry.source_of("mine__search_vaults") == "mine"
    h.store.put(McpServerIn(name="mine", url=vaults.url, secret_ref="MCP_SECRET_MISSING"))
    await h.manager.reload("mine")
    turn = await h.manager.tools_for_turn()
    assert "mine__search_vaults" not in turn.registry.names()
    # One refusal for every reason, naming no secret.
    assert h.manager.status()[0].last_error == REFUSAL
    h.store.delete("mine")
    await h.manager.reload("mine")
    assert h.manager.status() == []


async def test_a_server_that_accepts_but_never_answers_costs_a_bounded_wait(
    sql: WorkersSql, harness_factory: list[Harness]
) -> None:
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        h = await harness(
            sql,
            harness_factory,
            f"http://127.0.0.1:{port}/mcp",
            MCP_CONNECT_TIMEOUT_SECONDS="0.5",
            MCP_CONNECT_WAIT_SECONDS="0.2",
            # The attempt's own bound (0.5 s + one 1 s retry delay) stays clear of the
            # connect timeout, which is what this test is about.
            MCP_RETRY_BASE_SECONDS="1",
            MCP_RETRY_MAX_SECONDS="1",
        )
        await connection_module()  # loaded already, as in a warm object
        started = time.monotonic()
        turn = await h.manager.tools_for_turn()
        assert time.monotonic() - started < 1.5
        assert turn.registry.names() == ["echo", "local_only"]
        # The failed attempt records why before the state turns to reconnecting.
        await wait_state(h.manager, "vaults", "reconnecting", within=5)
        assert h.manager.status()[0].last_error.startswith("timed out")
    finally:
        for writer in held:
            writer.transport.abort()
        silent.close()


async def test_a_tool_list_change_is_seen_without_waiting_for_the_health_window(
    sql: WorkersSql, harness_factory: list[Harness]
) -> None:
    with InProcessMcpServer("generic") as server:
        h = await harness(
            sql, harness_factory, server.url, name="utils", MCP_HEALTH_CACHE_SECONDS="600"
        )
        turn = await h.manager.tools_for_turn()
        assert not any(n.startswith("extra_tool") for n in turn.registry.names())
        added = (await turn.registry.get("grow").execute({})).joined_text()
        deadline = time.monotonic() + 5
        names: list[str] = []
        while time.monotonic() < deadline and added not in names:
            names = (await h.manager.tools_for_turn()).registry.names()
            await asyncio.sleep(0.05)
        assert added in names


async def test_the_change_stream_notices_a_dead_server_between_messages(
    sql: WorkersSql, harness_factory: list[Harness], vaults: InProcessMcpServer
) -> None:
    gate = await TcpProxy(vaults.port).start()
    try:
        h = await harness(
            sql,
            harness_factory,
            f"http://127.0.0.1:{gate.port}/mcp",
            MCP_HEALTH_CACHE_SECONDS="600",
        )
        await h.manager.tools_for_turn()
        await gate.stop()
        # No message is sent: the dropped stream alone starts the recovery.
        await wait_state(h.manager, "vaults", "reconnecting", within=5)
        await gate.start()
        await wait_state(h.manager, "vaults", "ready", within=5)
    finally:
        await gate.stop()
