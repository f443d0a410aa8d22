"""The MCP client of one client's object: the façade the chat sees.

The manager holds one `McpServer` per configured server (albert.mcp.server) and hands each
request to it or to what the servers share (`ServerSite`):

- Start: every enabled server connects in the background (`McpServer.start`); a turn
  never waits for more than a short, bounded moment (MCP_CONNECT_WAIT_SECONDS).
- Recovery: a server that is not up is retried on the object's alarm
  (albert.mcp.recovery_scheduler, along albert.mcp.recovery_policy). Every change is
  broadcast to the browser as an `mcp_status` frame (albert.mcp.status).
- Authorization: a server that asks for OAuth waits in `needs_authorization` until the
  user authorizes it (`authorize`, `finish_authorization`; albert.mcp.oauth_flow).
- Nothing dies silently: every background task of a server has a done-callback
  (albert.mcp.background); one that ends in an exception is logged, its exception
  becomes the server's `last_error` and the server goes on along the recovery schedule.
- Tools: `ToolCatalogue` (albert.mcp.turn_tools) builds a turn's tools from the servers,
  each of which keeps its tool list fresh and runs its own tools' calls.
- The chat service holds this manager in an `McpAccess` (albert.mcp.access), with the
  config store and the HTTP API under /api/mcp/.
- Cold start: what the servers share is made, and its modules imported, with the first
  configured server, config change or alarm: an object whose client has no MCP server
  answers its turns with the local tools and never loads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from albert.clock import Clock, SystemClock
from albert.mcp.alarm_port import AlarmPort
from albert.mcp.background import BackgroundTasks
from albert.mcp.config_store import McpConfigStore
from albert.mcp.oauth_access import OAuthAccess
from albert.mcp.oauth_store import UNKNOWN_AUTHORIZATION, AuthorizationFailed, OAuthStore
from albert.mcp.status import StatusBroadcast
from albert.ports import ChatSocket, SocketHub, TurnTools
from albert.protocol.frames import McpServerStatus
from albert.settings import Settings
from albert.storage.ports import SqlStorage
from albert.tools.base import Tool
from albert.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from albert.mcp.configs import McpServerConfig, SecretLookup
    from albert.mcp.oauth_flow import OAuthFlow
    from albert.mcp.server import McpServer, ServerSite
    from albert.mcp.ssrf import Resolver


class UnknownServer(LookupError):
    """No enabled server of that name takes OAuth."""


class McpManager:
    """The ToolProvider of a client's object, with remote MCP servers behind it."""

    def __init__(
        self,
        *,
        store: McpConfigStore,
        settings: Settings,
        local_tools: Sequence[Tool],
        alarms: AlarmPort,
        secrets: SecretLookup,
        hub: SocketHub | None = None,
        resolver: Resolver | None = None,
        clock: Clock | None = None,
        sql: SqlStorage | None = None,
    ) -> None:
        """`sql`: the object's SQLite, which keeps recovery cycles across restarts and the
        servers' OAuth (without it cycles live in memory and a 401 is a plain failure);
        `resolver`: the DNS lookup of the SSRF checks (the system's without)."""
        clock = clock or SystemClock()
        self._store = store
        self._settings = settings
        self._local_tools = list(local_tools)
        self._alarms = alarms
        self._secrets = secrets
        self._resolver = resolver
        self._clock = clock
        self._sql = sql
        self._hub = hub
        self._oauth = (
            None
            if sql is None
            else OAuthAccess(OAuthStore(sql, clock.now_ms), clock, settings.mode, resolver)
        )
        self._servers: dict[str, McpServer] = {}
        self._site: ServerSite | None = None
        self._started = False
        self._tasks = BackgroundTasks()
        self._status = StatusBroadcast(self._servers, clock, hub)

    def _shared(self) -> ServerSite:
        """What the servers share, made on first use (no await here: made once)."""
        if self._site is None:
            from albert.mcp.recovery_policy import RecoveryLog, RecoveryPolicy
            from albert.mcp.recovery_scheduler import RecoveryScheduler
            from albert.mcp.server import ServerSite
            from albert.mcp.ssrf import system_resolver
            from albert.mcp.turn_tools import ToolCatalogue

            scheduler = RecoveryScheduler(
                self._servers,
                policy=RecoveryPolicy.from_settings(self._settings),
                alarms=self._alarms,
                clock=self._clock,
                log=None if self._sql is None else RecoveryLog(self._sql),
                hub=self._hub,
            )
            self._site = ServerSite(
                configs=self._store,
                settings=self._settings,
                secrets=self._secrets,
                resolver=self._resolver or system_resolver,
                clock=self._clock,
                scheduler=scheduler,
                catalogue=ToolCatalogue(self._servers, self._local_tools),
                tasks=self._tasks,
                status=self._status,
                oauth=self._oauth,
            )
        return self._site

    def _oauth_flow(self) -> OAuthFlow:
        if self._oauth is None:
            raise RuntimeError("this manager keeps no OAuth state")
        return self._oauth.flow()

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Begin connecting to every enabled server in the background (idempotent)."""
        if self._started:
            return
        self._started = True
        if not self._store.has_any():
            return
        for config in self._store.all():
            self._add(config)

    def _add(self, config: McpServerConfig) -> None:
        from albert.mcp.server import McpServer

        server = McpServer(config, self._shared())
        self._servers[config.name] = server
        server.start()

    async def reload(self, name: str) -> None:
        """A config was added, changed or removed: drop the old connection, start afresh."""
        self.start()
        old = self._servers.pop(name, None)
        if old is not None:
            await old.retire()
        scheduler = self._shared().scheduler
        scheduler.forget(name)
        config = self._store.get(name)
        moved = config is None or old is None or config.url != old.config.url
        if self._oauth is not None and moved:
            # Tokens belong to a server at one URL: a removed or moved config drops them.
            self._oauth.store.forget(name)
        if config is not None:
            self._add(config)
        self._status.notify()
        await scheduler.arm()

    async def close(self) -> None:
        """Close every connection and stop background work.

        From here on a connection ending is the close itself, not a server lost: no
        warning, no recovery (the host is stopping, or the object going away).
        """
        self._tasks.stop()
        await asyncio.gather(*(server.drop() for server in list(self._servers.values())))
        await self._tasks.drain()

    # --- authorization (OAuth) -------------------------------------------------------

    async def authorize(self, name: str, redirect_uri: str, seal: Callable[[str], str]) -> str:
        """Begin a server's authorization: the URL the user's browser opens.

        UnknownServer or AuthorizationFailed (albert.mcp.oauth_flow) when it cannot begin.
        """
        self.start()
        server = self._servers.get(name)
        if server is None or server.state == "disabled" or not server.config.uses_oauth:
            raise UnknownServer(name)
        return await self._oauth_flow().start(name, server.config.url, redirect_uri, seal)

    async def finish_authorization(self, nonce: str, query: dict[str, str]) -> str:
        """The callback of an authorization: store the tokens and connect; the server's name.

        AuthorizationFailed when the callback cannot finish it.
        """
        self.start()
        if self._oauth is None or self._oauth.store.pending(nonce) is None:
            # Made up or used already: answered without loading the SDK.
            raise AuthorizationFailed(UNKNOWN_AUTHORIZATION)
        name = await self._oauth_flow().finish(nonce, query)
        server = self._servers.get(name)
        if server is not None and server.current and server.state != "disabled":
            await server.reconnect()
        return name

    async def on_alarm(self) -> None:
        """The object's alarm rang: run every retry that is due, then plan the next."""
        if self._tasks.closed:
            return
        self.start()
        await self._shared().scheduler.on_alarm()

    # --- what the chat sees ----------------------------------------------------------

    async def tools_for_turn(self) -> TurnTools:
        """Local tools, with every ready server's tools merged over them."""
        self.start()
        if not self._servers:
            return TurnTools(registry=ToolRegistry(self._local_tools))
        site = self._shared()
        await site.scheduler.probe_half_open()
        await self._wait_for_first_connections()
        return await site.catalogue.build()

    async def _wait_for_first_connections(self) -> None:
        # A server still on its first attempt may be a moment away: wait that moment.
        first = [
            s.first_attempt
            for s in self._servers.values()
            if s.state == "connecting" and s.first_attempt is not None
        ]
        if not first or self._settings.mcp_connect_wait_seconds <= 0:
            return
        from albert.mcp.lazy_connection import load_client

        # The SDK's one-off load (seconds in a cold isolate) is not the servers' slowness:
        # it is waited for first, so the servers get the whole wait once it is done.
        try:
            await load_client()
        except Exception:
            return  # the attempts record why; this turn goes on without those servers
        await asyncio.wait(first, timeout=self._settings.mcp_connect_wait_seconds)

    def status(self) -> list[McpServerStatus]:
        """Every configured server's state, in configuration order."""
        self.start()
        return self._status.status()

    def socket_opened(self, socket: ChatSocket) -> None:
        """A new socket: tell it every server's state now, and plan alarm retries for it.

        Failed servers are retried on the alarm only while someone watches (see
        `RecoveryScheduler`), so a socket opening may bring their next try forward.
        """
        self.start()
        self._status.send_to(socket)
        if any(s.state == "failed" for s in self._servers.values()):
            self._tasks.spawn(self._shared().scheduler.arm())
