"""Running a remote tool: a health check first, and recovery when the call drops.

A call whose connection drops starts the server's recovery. It is repeated once,
on a fresh connection, only when the tool is annotated `idempotentHint`: any other
call may have had its effect already. A call the server refused because it forgot
our session never ran, so it is repeated once on a new session whatever the tool.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from albert.clock import Clock
from albert.mcp.health import HealthCheck, OnBroken
from albert.mcp.reconnection_policy import ServerState
from albert.mcp.remote_tool import RemoteToolSpec
from albert.tools.base import ToolResult

log = logging.getLogger(__name__)


class RemoteInvoker:
    """Executes the remote tools of a turn (the `Invoker` behind every RemoteTool)."""

    def __init__(
        self,
        servers: Mapping[str, ServerState],
        *,
        health: HealthCheck,
        connect: Callable[[ServerState], Awaitable[bool]],
        on_broken: OnBroken,
        clock: Clock,
    ) -> None:
        self._servers = servers
        self._health = health
        self._connect = connect
        self._on_broken = on_broken
        self._clock = clock

    async def invoke(
        self, server_name: str, spec: RemoteToolSpec, arguments: dict[str, Any]
    ) -> ToolResult:
        """Run a remote tool with a health check first and recovery on a dropped call."""
        server = self._servers.get(server_name)
        if server is None or server.state != "ready" or server.conn is None:
            return ToolResult.error(
                f"{spec.name} is unavailable: the {server_name} server is not connected right now"
            )
        specs = await self._health.fresh_tools(server)
        if specs is None or server.conn is None:
            return ToolResult.error(
                f"{spec.name} is unavailable: the connection to the {server_name} server was "
                "lost; it is reconnecting"
            )
        if all(s.name != spec.name for s in specs):
            return ToolResult.error(f"{spec.name} is no longer offered by the {server_name} server")
        conn = server.conn
        try:
            result = await conn.call_tool(spec.name, arguments)
        except Exception as exc:
            lost = conn.lost_reason(exc)
            if lost is None:
                return _failed(spec, server, exc)
            if conn.session_lost(exc):
                self._on_broken(server, lost)
                return await self._replay(server, spec, arguments)
            return await self._after_drop(server, spec, arguments, lost)
        server.answered(self._clock.monotonic())
        return result

    async def _after_drop(
        self, server: ServerState, spec: RemoteToolSpec, arguments: dict[str, Any], lost: str
    ) -> ToolResult:
        self._on_broken(server, lost)
        if not spec.idempotent:
            return ToolResult.error(
                f"{spec.name} failed: the connection to the {server.name} server dropped during "
                "the call; it was not repeated, as it may not be safe to repeat. "
                "The server is reconnecting."
            )
        return await self._replay(server, spec, arguments)

    async def _replay(
        self, server: ServerState, spec: RemoteToolSpec, arguments: dict[str, Any]
    ) -> ToolResult:
        """Reconnect once at once and repeat a call that is safe to repeat."""
        dropped = ToolResult.error(
            f"{spec.name} failed: the connection to the {server.name} server dropped and "
            "could not be restored yet; it is reconnecting"
        )
        if not await self._connect(server) or server.conn is None:
            return dropped
        conn = server.conn
        try:
            result = await conn.call_tool(spec.name, arguments)
        except Exception as exc:
            lost = conn.lost_reason(exc)
            if lost is not None:
                self._on_broken(server, lost)
                return dropped
            return _failed(spec, server, exc)
        log.info("repeated tool %s on a new connection after a dropped call", spec.name)
        return result


def _failed(spec: RemoteToolSpec, server: ServerState, exc: BaseException) -> ToolResult:
    return ToolResult.error(f"{spec.name} failed on the {server.name} server: {_short(exc)}")


def _short(exc: BaseException, limit: int = 200) -> str:
    code = getattr(exc, "code", None)
    message = " ".join(str(exc).split())[:limit] or type(exc).__name__
    return f"{message} (code {code})" if isinstance(code, int) else message
