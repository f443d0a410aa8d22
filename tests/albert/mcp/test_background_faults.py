"""No background task of the manager dies silently, and no attempt outlives its bound.

Faults are injected at the ports: the clock failing once, the object's storage
failing once. Each time the server must end up on the recovery schedule with the
fault as its `last_error`, logged with its traceback, and reach `ready` once the
fault is gone.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from typing import Any

import pytest

from albert.cloudflare.sql import WorkersSql
from albert.mcp.alarm_port import LoopAlarm
from albert.mcp.config_store import McpConfigStore
from albert.mcp.manager import McpManager
from albert.mcp.secret_binding import SecretBinding
from albert.settings import Settings
from tests.albert.mcp.conftest import fast_settings, now_ms
from tests.albert.mcp.test_manager import LOCAL, Hub, wait_state
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.tcp_proxy import TcpProxy


class ClockFailingOnce:
    """The system clock, except that one `now_ms` call raises once armed."""

    def __init__(self) -> None:
        self.armed = True
        self.failed = asyncio.Event()

    def now_ms(self) -> int:
        if self.armed:
            self.armed = False
            self.failed.set()
            raise RuntimeError("clock unavailable")
        return int(time.time() * 1000)

    def monotonic(self) -> float:
        return time.monotonic()


class SqlFailingOnce:
    """The object's storage, except that the next read of MCP configs fails once armed."""

    def __init__(self, sql: WorkersSql) -> None:
        self._sql = sql
        self.armed = False

    def execute(self, query: str, *params: Any) -> Any:
        if self.armed and "FROM mcp_servers" in query:
            self.armed = False
            raise sqlite3.OperationalError("disk I/O error")
        return self._sql.execute(query, *params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sql, name)


def manager(sql: Any, settings: Settings, clock: Any = None) -> tuple[McpManager, Hub, LoopAlarm]:
    alarm = LoopAlarm()
    hub = Hub()
    built = McpManager(
        store=McpConfigStore(sql, settings, now_ms),
        settings=settings,
        local_tools=LOCAL,
        alarms=alarm,
        secrets=SecretBinding({}, "default", lambda _name: None),
        hub=hub,
        clock=clock,
    )
    alarm.bind(built.on_alarm)
    return built, hub, alarm


async def test_a_connect_task_that_dies_goes_on_along_the_schedule(
    sql: WorkersSql, vaults: InProcessMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    gate = TcpProxy(vaults.port)  # down at first: the first attempt fails, then plans
    clock = ClockFailingOnce()  # ... and planning is where the task dies
    settings = fast_settings(MCP_DEFAULT_SERVER_URL=f"http://127.0.0.1:{gate.port}/mcp")
    mcp, hub, alarm = manager(sql, settings, clock)
    try:
        with caplog.at_level(logging.ERROR, logger="albert.mcp.background"):
            mcp.start()
            await asyncio.wait_for(clock.failed.wait(), 10)
            await wait_state(mcp, "vaults", "reconnecting")
        died = [r for r in caplog.records if "died" in r.getMessage()]
        assert died and died[0].exc_info is not None, caplog.records
        # The browser was told why, with the state that follows from it.
        told = [s for f in hub.socket.frames for s in f["servers"] if s["state"] == "reconnecting"]
        assert told and told[0]["last_error"] == "internal error (RuntimeError: clock unavailable)"
        await gate.start()
        await wait_state(mcp, "vaults", "ready")
    finally:
        await mcp.close()
        alarm.close()
        await gate.stop()


async def test_an_attempt_that_raises_is_a_failed_attempt_not_a_dead_task(
    sql: WorkersSql, vaults: InProcessMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = SqlFailingOnce(sql)
    settings = fast_settings(MCP_DEFAULT_SERVER_URL=vaults.url)
    mcp, hub, alarm = manager(flaky, settings)
    try:
        mcp.start()  # reads the configs; the attempt reads its config again, and fails
        flaky.armed = True
        with caplog.at_level(logging.ERROR, logger="albert.mcp.server"):
            await wait_state(mcp, "vaults", "ready")
        assert not flaky.armed  # the fault happened
        logged = [r for r in caplog.records if "unexpectedly" in r.getMessage()]
        assert logged and logged[0].exc_info is not None
        told = [s for f in hub.socket.frames for s in f["servers"]]
        assert told[0]["state"] == "reconnecting"
        assert told[0]["last_error"] == "internal error while reading the config (OperationalError)"
        assert told[-1]["state"] == "ready" and told[-1]["last_error"] is None
    finally:
        await mcp.close()
        alarm.close()


async def test_an_attempt_never_outlasts_its_bound_whatever_it_waits_for(
    sql: WorkersSql,
) -> None:
    """A server that takes the connection and never answers: `connecting` ends in time."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    settings = fast_settings(
        MCP_DEFAULT_SERVER_URL=f"http://127.0.0.1:{port}/mcp",
        MCP_CONNECT_TIMEOUT_SECONDS="0.5",
        MCP_RETRY_BASE_SECONDS="0.2",
        MCP_RETRY_MAX_SECONDS="0.2",
    )
    mcp, _hub, alarm = manager(sql, settings)
    try:
        started = time.monotonic()
        mcp.start()
        # Bound: 0.5 s + one 0.2 s delay; polled, on a machine that may be loaded.
        await wait_state(mcp, "vaults", "reconnecting", within=5)
        took = time.monotonic() - started
        assert took < 0.7 + 1.5, took
        [status] = mcp.status()
        assert status.last_error is not None and status.last_error.startswith("timed out")
    finally:
        await mcp.close()
        alarm.close()
        for writer in held:
            writer.transport.abort()
        silent.close()
