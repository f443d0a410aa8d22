"""One connection attempt to an MCP server, from its persisted config.

The URL is checked (SSRF rules) and the secret filled in on every attempt, so a
changed config or a rotated secret is picked up by the next retry. This is the
one place that imports the SDK-backed `albert.mcp.connection`, and only when a
server is actually connected.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from albert.clock import Clock
from albert.mcp.configs import McpConfigStore, McpServerConfig, MissingSecret, SecretLookup
from albert.mcp.server_state import ServerState
from albert.mcp.ssrf import ConnectCheck, Resolver, UrlRefused, check_url
from albert.settings import Settings

if TYPE_CHECKING:
    from albert.mcp.connection import McpConnection

CONNECTION_MODULE = "albert.mcp.connection"


def _import_connection() -> ModuleType:
    from albert.mcp import connection

    return connection


async def connection_module() -> ModuleType:
    """The SDK-backed connection module, imported off the event loop where threads exist.

    Importing `mcp` takes about a second; on a thread it does not hold up chat
    frames of the same object. Pyodide has no threads, so there it imports inline.
    """
    if CONNECTION_MODULE not in sys.modules:
        try:
            return await asyncio.to_thread(_import_connection)
        except RuntimeError:
            pass
    return _import_connection()


class Connector:
    """Opens a server's connection; the server's state machine records the outcome."""

    def __init__(
        self,
        *,
        store: McpConfigStore,
        settings: Settings,
        secrets: SecretLookup,
        resolver: Resolver,
        clock: Clock,
        on_lost: Callable[[ServerState, McpConnection], None],
        on_ready: Callable[[ServerState], None],
    ) -> None:
        self._store = store
        self._settings = settings
        self._secrets = secrets
        self._resolver = resolver
        self._clock = clock
        self._on_lost = on_lost
        self._on_ready = on_ready

    async def connect(self, server: ServerState) -> bool:
        """One attempt from the persisted config; True when the server is ready."""
        async with server.lock:
            if server.conn is not None and server.conn.alive:
                return True
            config = self._store.get(server.name)
            if config is None or not config.enabled:
                server.disabled()
                return False
            server.config = config
            headers = await self._vetted_headers(server, config)
            if headers is None or not await self._open(server, config, headers):
                return False
        self._on_ready(server)
        return True

    async def _vetted_headers(
        self, server: ServerState, config: McpServerConfig
    ) -> dict[str, str] | None:
        try:
            async with asyncio.timeout(self._settings.mcp_connect_timeout_seconds):
                await check_url(config.url, self._settings.mode, self._resolver)
            return config.request_headers(self._secrets)
        except (UrlRefused, MissingSecret, TimeoutError) as exc:
            server.connect_failed(str(exc) or "the URL check timed out")
            return None

    async def _open(
        self, server: ServerState, config: McpServerConfig, headers: dict[str, str]
    ) -> bool:
        connection = await connection_module()
        timeout = self._settings.mcp_connect_timeout_seconds
        conn = connection.McpConnection(
            config.name,
            config.url,
            headers,
            on_lost=lambda lost: self._on_lost(server, lost),
            on_tools_changed=server.tools_changed,
            # Each socket's address is checked again as it opens (DNS rebinding).
            connect_check=ConnectCheck(self._settings.mode, self._resolver),
        )
        try:
            await conn.connect(timeout)
            specs = await conn.list_tools(timeout)
        except Exception as exc:
            server.connect_failed(connection.describe_error(exc))
            await conn.close()
            return False
        server.connected(conn, specs, self._clock.monotonic())
        return True
