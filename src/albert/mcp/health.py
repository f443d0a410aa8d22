"""The health check of a ready server: its tool list, cached, and its change stream.

Listing the tools doubles as the health check, cached for MCP_HEALTH_CACHE_SECONDS
and repeated at once when the server said its tools changed. While a server is
ready its change stream stays open; when the stream ends, a health check tells a
dead server from one that just closed it. A server that answers but forgot our
session (a restart) gets a new session at once, so the turn keeps its tools.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from albert.clock import Clock
from albert.mcp.reconnection_policy import ServerState
from albert.mcp.remote_tool import RemoteToolSpec
from albert.settings import Settings

if TYPE_CHECKING:
    from albert.mcp.connection import McpConnection

log = logging.getLogger(__name__)

OnBroken = Callable[[ServerState, str], None]
Spawn = Callable[[Coroutine[Any, Any, Any]], Any]


class HealthCheck:
    """Keeps each ready server's tool list fresh and notices when it is gone."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        *,
        on_broken: OnBroken,
        spawn: Spawn,
        connect: Callable[[ServerState], Awaitable[bool]] | None = None,
    ) -> None:
        """`connect`: one connection attempt (the connector's), for a forgotten session."""
        self._settings = settings
        self._clock = clock
        self._on_broken = on_broken
        self._spawn = spawn
        self._connect = connect

    async def fresh_tools(self, server: ServerState) -> list[RemoteToolSpec] | None:
        """The server's tools; listed again when stale or the health window passed.

        Never raises: a failure costs the turn this server's tools, and a
        connection failure starts recovery.
        """
        conn = server.conn
        age = self._clock.monotonic() - server.checked_at
        fresh = age < self._settings.mcp_health_cache_seconds
        if server.tools is not None and fresh and not server.tools_stale:
            return server.tools
        if conn is None:
            return None
        try:
            specs = await conn.list_tools(self._settings.mcp_connect_timeout_seconds)
        except Exception as exc:
            reason = conn.lost_reason(exc)
            refused = conn.refused_answer(exc)
            if reason is not None:
                self._on_broken(server, reason)
                if conn.session_lost(exc):
                    return await self._new_session(server)
            elif refused is not None:
                # Over our bounds: no retry fixes that, so the server is failed for good.
                server.connect_failed(refused, final=True)
                self._on_broken(server, refused)
            else:
                log.warning("MCP server %s could not list tools: %s", server.name, exc)
            return None
        server.tools_listed(specs, self._clock.monotonic())
        return specs

    async def _new_session(self, server: ServerState) -> list[RemoteToolSpec] | None:
        # The server is there (it answered), so one attempt now is likely to succeed; if
        # not, the recovery `on_broken` started carries on as for any lost connection.
        if self._connect is None or not await self._connect(server) or server.conn is None:
            return None
        log.info("MCP server %s forgot our session: a new one is open", server.name)
        return server.tools

    def watch(self, server: ServerState) -> None:
        """Keep the server's change stream open while it is ready (no-op without one)."""
        conn = server.conn
        if conn is not None and server.state == "ready":
            conn.watch(lambda: self._watch_ended(server, conn))

    def _watch_ended(self, server: ServerState, conn: McpConnection) -> None:
        # The stream ends when the server goes away, or for reasons of its own: a
        # health check tells which. The next turn opens it again if all is well.
        if server.conn is conn and server.state == "ready":
            server.health_unknown()
            self._spawn(self.fresh_tools(server))
