"""The MCP client of one client's object: the façade the chat sees, and the servers' lifecycle.

- Start: every enabled server is connected in the background (`Connector`); a
  turn never waits for more than a short, bounded moment (MCP_CONNECT_WAIT_SECONDS).
- State and recovery: `albert.mcp.reconnection_policy` (each server's state machine,
  the backoff, the cycle kept in SQLite, the scheduler on the object's alarm). Every
  change is broadcast to the browser as an `mcp_status` frame (`StatusBroadcast`).
- Authorization: a server that asks for OAuth waits in `needs_authorization` until the
  user authorizes it (`authorize`, `finish_authorization`; albert.mcp.oauth_flow).
- Nothing dies silently: every background task of a server has a done-callback;
  one that ends in an exception is logged, its exception becomes the server's
  `last_error` and the server goes on along the retry schedule.
- Tools: `HealthCheck` keeps each ready server's tool list fresh, `ToolCatalogue`
  builds a turn's tools and `RemoteInvoker` runs the remote ones.
- The chat service holds an `McpAccess`: the config store, this manager, and the HTTP
  API under /api/mcp/ (made on its first request).
- Cold start: that machinery (`_Remote`) is made, and its modules imported, with the
  first configured server, config change or alarm: an object whose client has no MCP
  server answers its turns with the local tools and never loads it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from albert.clock import Clock, SystemClock
from albert.mcp.alarm_port import AlarmPort
from albert.mcp.config_store import McpConfigStore
from albert.mcp.oauth_store import UNKNOWN_AUTHORIZATION, AuthorizationFailed, OAuthStore
from albert.ports import ChatSocket, SocketHub, TurnTools
from albert.protocol.frames import McpServerStatus, McpStatusFrame
from albert.settings import Settings
from albert.storage.ports import SqlStorage
from albert.tools.base import Tool
from albert.tools.registry import ToolRegistry
from albert.web import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from albert.mcp.api import McpApi
    from albert.mcp.configs import McpServerConfig, SecretLookup
    from albert.mcp.connection import McpConnection
    from albert.mcp.connector import Connector
    from albert.mcp.health import HealthCheck
    from albert.mcp.oauth_flow import OAuthFlow
    from albert.mcp.reconnection_policy import RecoveryScheduler, ServerState
    from albert.mcp.ssrf import Resolver
    from albert.mcp.turn_tools import ToolCatalogue

log = logging.getLogger(__name__)


class UnknownServer(LookupError):
    """No enabled server of that name takes OAuth."""


# How long `close` waits for connections still closing in the background.
CLOSE_WAIT_SECONDS = 2.5


class _Remote(NamedTuple):
    """What connects, watches, retries and offers the remote servers of one manager."""

    connector: Connector
    recovery: RecoveryScheduler
    health: HealthCheck
    catalogue: ToolCatalogue


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
        self._oauth_store = None if sql is None else OAuthStore(sql, clock.now_ms)
        self._oauth_flow: OAuthFlow | None = None
        self._built: _Remote | None = None
        self._servers: dict[str, ServerState] = {}
        self._started = False
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        # Connections being closed in the background: awaited by `close`, never cancelled
        # (a close cut short leaves the SDK's session half torn down).
        self._closing: set[asyncio.Task[Any]] = set()
        self._hub = hub
        self._status = StatusBroadcast(self._servers, clock, hub)

    def _remote(self) -> _Remote:
        """The per-server machinery, made on first use (no await here: made once)."""
        if self._built is None:
            from albert.mcp.connector import Connector
            from albert.mcp.health import HealthCheck
            from albert.mcp.invoker import RemoteInvoker
            from albert.mcp.reconnection_policy import ReconnectPolicy, RecoveryScheduler, RetryLog
            from albert.mcp.ssrf import system_resolver
            from albert.mcp.turn_tools import ToolCatalogue

            settings, clock = self._settings, self._clock
            policy = ReconnectPolicy.from_settings(settings)
            connector = Connector(
                store=self._store,
                settings=settings,
                secrets=self._secrets,
                resolver=self._resolver or system_resolver,
                clock=clock,
                on_lost=self._on_lost,
                on_ready=self._on_ready,
                spawn=self._spawn_close,
                # The bound of one attempt, so a server is never `connecting` for longer.
                attempt_seconds=settings.mcp_connect_timeout_seconds + policy.ceiling(1),
                oauth_store=self._oauth_store,
                oauth=self.oauth,
            )
            recovery = RecoveryScheduler(
                self._servers,
                policy=policy,
                alarms=self._alarms,
                clock=clock,
                connect=connector.connect,
                log=None if self._sql is None else RetryLog(self._sql),
                watched=self._watched,
            )
            health = HealthCheck(
                settings,
                clock,
                on_broken=self._broken,
                spawn=self._spawn,
                connect=connector.connect,
            )
            invoker = RemoteInvoker(
                self._servers,
                health=health,
                connect=connector.connect,
                on_broken=self._broken,
                clock=clock,
            )
            catalogue = ToolCatalogue(
                self._servers, local_tools=self._local_tools, health=health, invoke=invoker.invoke
            )
            self._built = _Remote(connector, recovery, health, catalogue)
        return self._built

    def oauth(self) -> OAuthFlow:
        """The servers' OAuth flow, made (and `mcp` imported) on first use."""
        if self._oauth_flow is None:
            if self._oauth_store is None:
                raise RuntimeError("this manager keeps no OAuth state")
            from albert.mcp.oauth_flow import OAuthFlow
            from albert.mcp.ssrf import system_resolver

            self._oauth_flow = OAuthFlow(
                self._oauth_store,
                self._clock,
                self._settings.mode,
                self._resolver or system_resolver,
            )
        return self._oauth_flow

    @property
    def recovery(self) -> RecoveryScheduler:
        """Plans, arms and runs the servers' reconnection attempts."""
        return self._remote().recovery

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
        from albert.mcp.reconnection_policy import ServerState

        server = ServerState.for_config(config, self._status.notify)
        self._servers[config.name] = server
        if not config.enabled:
            return
        if self.recovery.resume(server):
            # A cycle from before a restart: its alarm (kept by the platform) or this one.
            self._spawn(self.recovery.arm())
        else:
            server.first_attempt = self._spawn(self._initial_connect(server), server=server)

    async def reload(self, name: str) -> None:
        """A config was added, changed or removed: drop the old connection, start afresh."""
        self.start()
        old = self._servers.pop(name, None)
        if old is not None:
            old.retired = True
            await self._drop(old)
        self.recovery.forget(name)
        config = self._store.get(name)
        moved = config is None or old is None or config.url != old.config.url
        if self._oauth_store is not None and moved:
            # Tokens belong to a server at one URL: a removed or moved config drops them.
            self._oauth_store.forget(name)
        if config is not None:
            self._add(config)
        self._status.notify()
        await self.recovery.arm()

    async def close(self) -> None:
        """Close every connection and stop background work.

        From here on a connection ending is the close itself, not a server lost: no
        warning, no recovery (the host is stopping, or the object going away).
        """
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*(self._drop(s) for s in list(self._servers.values())))
        if self._closing:
            # Each close is bounded (McpConnection.close); the host's stop bounds this too.
            await asyncio.wait(list(self._closing), timeout=CLOSE_WAIT_SECONDS)

    async def _drop(self, server: ServerState) -> None:
        server.retry.reset()
        if server.first_attempt is not None and not server.first_attempt.done():
            server.first_attempt.cancel()
        conn, server.conn = server.conn, None
        if conn is not None:
            await conn.close()

    def _spawn(
        self, work: Coroutine[Any, Any, Any], *, server: ServerState | None = None
    ) -> asyncio.Task[Any]:
        """Run `work` in the background; an exception it ends with is never lost.

        With `server`, the task is part of that server's connecting or recovery, and
        an exception it dies of sends the server on along the retry schedule.
        """
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._task_done(done, server))
        return task

    def _spawn_close(self, closing: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Close a connection in the background; `close` waits for it."""
        task = asyncio.ensure_future(closing)
        self._closing.add(task)
        task.add_done_callback(lambda done: self._task_done(done, None, self._closing))
        return task

    def _task_done(
        self,
        task: asyncio.Task[Any],
        server: ServerState | None,
        group: set[asyncio.Task[Any]] | None = None,
    ) -> None:
        (self._tasks if group is None else group).discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        name = server.name if server is not None else "-"
        log.error(
            "MCP background task of server %s died: %s",
            name,
            type(exc).__name__,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        if server is not None and server.current and not self._closed:
            from albert.mcp.reconnection_policy import internal_error

            server.connect_failed(internal_error(exc))
            self._spawn(self.recovery.crashed(server))

    async def _initial_connect(self, server: ServerState) -> None:
        if not await self._remote().connector.connect(server):
            await self.recovery.begin(server)

    def _on_ready(self, server: ServerState) -> None:
        self.recovery.forget(server.name)
        self._remote().health.watch(server)
        # The tools a turn would offer, now: the status shows renamed and left-out tools
        # from the moment the server is up, not from its first turn.
        self._spawn(self._remote().catalogue.build())

    def _on_lost(self, server: ServerState, conn: McpConnection) -> None:
        if server.conn is conn and server.current:
            self._broken(server, "connection lost")

    def _broken(self, server: ServerState, reason: str) -> None:
        """The connection is gone: close it and start the recovery cycle (once)."""
        if self._closed:
            return
        conn = server.conn
        if not server.lost(reason):
            return
        if conn is not None:
            self._spawn_close(conn.close())
        self._spawn(self.recovery.begin(server), server=server)

    # --- authorization (OAuth) -------------------------------------------------------

    async def authorize(self, name: str, redirect_uri: str, seal: Callable[[str], str]) -> str:
        """Begin a server's authorization: the URL the user's browser opens.

        UnknownServer or AuthorizationFailed (albert.mcp.oauth_flow) when it cannot begin.
        """
        self.start()
        server = self._servers.get(name)
        if server is None or server.state == "disabled" or not server.config.uses_oauth:
            raise UnknownServer(name)
        return await self.oauth().start(name, server.config.url, redirect_uri, seal)

    async def finish_authorization(self, nonce: str, query: dict[str, str]) -> str:
        """The callback of an authorization: store the tokens and connect; the server's name.

        AuthorizationFailed when the callback cannot finish it.
        """
        self.start()
        if self._oauth_store is None or self._oauth_store.pending(nonce) is None:
            # Made up or used already: answered without loading the SDK.
            raise AuthorizationFailed(UNKNOWN_AUTHORIZATION)
        name = await self.oauth().finish(nonce, query)
        server = self._servers.get(name)
        if server is not None and server.current and server.state != "disabled":
            self.recovery.forget(name)
            await self._drop(server)
            if not await self._remote().connector.connect(server):
                await self.recovery.begin(server)
        return name

    async def on_alarm(self) -> None:
        """The object's alarm rang: run every retry that is due, then plan the next."""
        if self._closed:
            return
        self.start()
        await self.recovery.on_alarm()

    # --- what the chat sees ----------------------------------------------------------

    async def tools_for_turn(self) -> TurnTools:
        """Local tools, with every ready server's tools merged over them."""
        self.start()
        if not self._servers:
            return TurnTools(registry=ToolRegistry(self._local_tools))
        await self.recovery.probe_half_open()
        await self._wait_for_first_connections()
        return await self._remote().catalogue.build()

    async def _wait_for_first_connections(self) -> None:
        # A server still on its first attempt may be a moment away: wait that moment.
        first = [
            s.first_attempt
            for s in self._servers.values()
            if s.state == "connecting" and s.first_attempt is not None
        ]
        if not first or self._settings.mcp_connect_wait_seconds <= 0:
            return
        from albert.mcp.connector import load_client

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
            self._spawn(self.recovery.arm())

    def _watched(self) -> bool:
        return self._hub is not None and bool(self._hub.sockets())


# --- what the browser sees ------------------------------------------------------------


class StatusBroadcast:
    """Builds the servers' status and broadcasts it as an `mcp_status` frame."""

    def __init__(
        self, servers: Mapping[str, ServerState], clock: Clock, hub: SocketHub | None
    ) -> None:
        self._servers = servers
        self._clock = clock
        self._hub = hub

    def status(self) -> list[McpServerStatus]:
        """Every configured server's state, in configuration order."""
        now = self._clock.now_ms() / 1000
        return [_status_of(server, now) for server in self._servers.values()]

    def frame(self) -> str:
        """The current status as an `mcp_status` frame."""
        return McpStatusFrame(servers=self.status()).model_dump_json()

    def notify(self) -> None:
        """Send the current status to every socket of this client (never raises).

        Called on every state change: a failing socket list must not undo the change.
        """
        if self._hub is None:
            return
        try:
            text = self.frame()
            for socket in self._hub.sockets():
                socket.send(text)
        except Exception:
            log.exception("could not send the MCP status")

    def send_to(self, socket: ChatSocket) -> None:
        """Send the current status to one (new) socket."""
        socket.send(self.frame())


def _status_of(server: ServerState, now: float) -> McpServerStatus:
    ready = server.state == "ready"
    next_at = server.retry.next_at
    if server.state == "failed":
        # The half-open try: after the cool-down (on the alarm while a socket is open).
        next_at = server.retry.half_open_at
    return McpServerStatus(
        name=server.name,
        state=server.state,
        kind=server.kind if ready else None,
        tools=len(server.tools or []) if ready else 0,
        attempts=server.retry.attempts,
        next_retry_in_seconds=None if next_at is None else max(0.0, next_at - now),
        last_error=server.last_error,
        quarantined=server.quarantined,
        renamed=server.renamed,
    )


# --- what the chat service holds ------------------------------------------------------

MCP_API_PREFIX = "/api/mcp/"


class McpAccess:
    """The store, the manager, and the HTTP API made once on first use."""

    def __init__(
        self, store: McpConfigStore, manager: McpManager, api: Callable[[], McpApi]
    ) -> None:
        self.store = store
        self.manager = manager
        self._make_api = api
        self._api: McpApi | None = None

    @staticmethod
    def handles(path: str) -> bool:
        """True for the paths the MCP API owns."""
        return path.startswith(MCP_API_PREFIX)

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Answer one /api/mcp/ request."""
        return await self.api().handle(request)

    def api(self) -> McpApi:
        """The HTTP API, made on first use (no await here: made once)."""
        if self._api is None:
            self._api = self._make_api()
        return self._api
