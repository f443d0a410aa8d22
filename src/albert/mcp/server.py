"""One configured MCP server of a client's object: its connection, its calls, its tools and
its state machine.

- Connecting (`connect`): one attempt from the persisted config. The URL is checked (SSRF
  rules) and the secret filled in on every attempt, so a changed config or a rotated
  secret is picked up by the next retry. The connection is the SDK-backed class that
  `albert.mcp.lazy_connection` loads with the first server that connects. An attempt
  never raises and never outlasts its bound (the connect timeout plus one retry delay),
  whatever it waits for: the URL check, the server, or another attempt on the same
  server; the SDK's first load comes before that clock starts, with a bound of its own.
  Whatever went wrong becomes the server's `last_error`.
- States: every change of `state` happens here, along the table of
  `albert.mcp.recovery_policy`; each transition is logged and broadcast, and so are the
  two changes the browser shows besides the state: the number of tools and the tools
  left out or renamed. A server that is not up goes through recovery
  (`albert.mcp.recovery_scheduler`).
- Health: listing the tools doubles as the health check, cached for
  MCP_HEALTH_CACHE_SECONDS and repeated at once when the server said its tools changed.
  While the server is ready its change stream stays open; when the stream ends, a health
  check tells a dead server from one that just closed it. A server that answers but
  forgot our session (a restart) gets a new session at once, so the turn keeps its tools.
- Calls: a call whose connection drops starts recovery. It is repeated once, on a fresh
  connection, only when the tool is annotated `idempotentHint`: any other call may have
  had its effect already. A call the server refused because it forgot our session never
  ran, so it is repeated once on a new session whatever the tool.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from albert.clock import Clock
from albert.mcp.classify import ServerKind, classify_server
from albert.mcp.configs import McpServerConfig, MissingSecret, SecretLookup
from albert.mcp.lazy_connection import (
    CLIENT_LOAD_SECONDS,
    ConnectFailure,
    Connection,
    client_loaded,
    connection_class,
    load_client,
)
from albert.mcp.recovery_policy import TRANSITIONS, IllegalTransition, RecoveryCycle, Remedy
from albert.mcp.remote_tool import RemoteToolSpec
from albert.mcp.ssrf import ConnectCheck, Resolver, UrlRefused, check_url
from albert.protocol.frames import McpServerStatus, McpState
from albert.settings import Settings
from albert.tools.base import ToolResult

if TYPE_CHECKING:
    from albert.mcp.background import BackgroundTasks
    from albert.mcp.connection import McpConnection
    from albert.mcp.oauth_access import OAuthAccess
    from albert.mcp.recovery_scheduler import RecoveryScheduler
    from albert.mcp.status import StatusBroadcast
    from albert.mcp.turn_tools import ToolCatalogue

log = logging.getLogger(__name__)
# Bounds of the tool names a status carries.
MAX_TOOL_NAMES = 200
MAX_TOOL_NAME_CHARS = 80
# The states of a server that is not answering: entering one is logged as a warning.
FAILING: frozenset[McpState] = frozenset({"reconnecting", "failed", "needs_authorization"})


class ConfigSource(Protocol):
    """Where a server's config is read again before each attempt (McpConfigStore)."""

    def get(self, name: str) -> McpServerConfig | None: ...


@dataclass(frozen=True, eq=False)
class ServerSite:
    """What the servers of one object share: their configs, secrets and name lookups, the
    clock, OAuth, the recovery scheduler, the tool catalogue, the background tasks and the
    status the browser is sent."""

    configs: ConfigSource
    settings: Settings
    secrets: SecretLookup
    resolver: Resolver
    clock: Clock
    scheduler: RecoveryScheduler
    catalogue: ToolCatalogue
    tasks: BackgroundTasks
    status: StatusBroadcast
    oauth: OAuthAccess | None = None

    @property
    def attempt_seconds(self) -> float:
        """The bound of one attempt (the connect timeout plus one retry delay), so a server
        is never `connecting` for longer."""
        return self.settings.mcp_connect_timeout_seconds + self.scheduler.policy.ceiling(1)


def _internal_error(exc: BaseException) -> str:
    """The `last_error` of a server whose attempt died of a defect (not the server's doing)."""
    return f"internal error ({type(exc).__name__}: {exc})"[:300]


class McpServer:
    """One configured server: its connection, calls, tools and state machine."""

    def __init__(self, config: McpServerConfig, site: ServerSite) -> None:
        """A freshly configured server: connecting, or disabled by its config."""
        self.config = config
        self._site = site
        self.state: McpState = "connecting" if config.enabled else "disabled"
        self.conn: Connection | None = None
        self.recovery = RecoveryCycle()
        self.last_error: str | None = None
        self.tools: list[RemoteToolSpec] | None = None
        self.checked_at = float("-inf")  # monotonic time of the last passed health check
        self.tools_stale = False
        self.kind: ServerKind | None = None
        self.instructions: str | None = None
        # What the last turn left out, and offered under another name (the status shows both).
        self.quarantined: list[str] = []
        self.renamed: list[str] = []
        # The names its tools were last offered under (None: not offered to a turn yet).
        self.offered: list[str] | None = None
        self.first_attempt: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()  # one attempt at a time
        self.retired = False

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def current(self) -> bool:
        """Still the manager's server of this name (not replaced or removed since)."""
        return not self.retired

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Begin connecting in the background, or carry on a recovery cycle from before a
        restart (a disabled server does nothing)."""
        if not self.config.enabled:
            return
        scheduler, tasks = self._site.scheduler, self._site.tasks
        if scheduler.resume(self):
            # A cycle from before a restart: its alarm (kept by the platform) or this one.
            tasks.spawn(scheduler.arm())
        else:
            self.first_attempt = tasks.spawn(self._first_connect(), server=self)

    async def _first_connect(self) -> None:
        if not await self.connect():
            await self._site.scheduler.begin(self)

    async def reconnect(self) -> None:
        """Drop the connection and connect afresh at once (the user authorized the server);
        recovery when that fails."""
        scheduler = self._site.scheduler
        scheduler.forget(self.name)
        await self.drop()
        if not await self.connect():
            await scheduler.begin(self)

    async def retire(self) -> None:
        """Replaced or removed: nothing of it runs any more."""
        self.retired = True
        await self.drop()

    async def drop(self) -> None:
        """Close the connection and stop the first attempt; the recovery cycle starts over."""
        self.recovery.reset()
        if self.first_attempt is not None and not self.first_attempt.done():
            self.first_attempt.cancel()
        conn, self.conn = self.conn, None
        if conn is not None:
            await conn.close()

    def attempt_died(self, exc: BaseException) -> None:
        """An attempt died of `exc`, a defect rather than the server's doing: its last error."""
        self.connect_failed(_internal_error(exc))

    def task_died(self, exc: BaseException) -> None:
        """A background task of this server died of `exc`: go on along the recovery schedule."""
        tasks = self._site.tasks
        if self.current and not tasks.closed:
            self.attempt_died(exc)
            tasks.spawn(self._site.scheduler.crashed(self))

    def status(self, now: float) -> McpServerStatus:
        """What the browser is shown of this server (`now`: Unix seconds)."""
        ready = self.state == "ready"
        next_at = self.recovery.next_at
        if self.state == "failed":
            # The half-open try: after the cool-down (on the alarm while a socket is open).
            next_at = self.recovery.half_open_at
        return McpServerStatus(
            name=self.name,
            state=self.state,
            kind=self.kind if ready else None,
            tools=len(self.tools or []) if ready else 0,
            attempts=self.recovery.attempts,
            next_retry_in_seconds=None if next_at is None else max(0.0, next_at - now),
            last_error=self.last_error,
            quarantined=self.quarantined,
            renamed=self.renamed,
            tool_names=self._tool_names() if ready else [],
        )

    def _tool_names(self) -> list[str]:
        names = self.offered
        if names is None:
            names = [spec.name for spec in self.tools or []]
        return [name[:MAX_TOOL_NAME_CHARS] for name in names[:MAX_TOOL_NAMES]]

    # --- connecting ------------------------------------------------------------------

    async def connect(self) -> bool:
        """One attempt from the persisted config; True when the server is ready."""
        if not await self._client_ready():
            return False
        seconds = self._site.attempt_seconds
        step = ["waiting for another attempt on this server"]
        try:
            async with asyncio.timeout(seconds):
                ready = await self._attempt(step)
        except TimeoutError:
            self.connect_failed(f"timed out after {seconds:g} s while {step[0]}")
            # The state change that follows is the warning (once, not once per retry).
            log.info(
                "MCP server %s: attempt timed out after %g s while %s",
                self.name,
                seconds,
                step[0],
            )
            return False
        except Exception as exc:
            # A defect, not the server's doing: say so, and let recovery carry on.
            log.exception("MCP server %s: connection attempt failed unexpectedly", self.name)
            self.connect_failed(f"internal error while {step[0]} ({type(exc).__name__})")
            return False
        if ready:
            self._ready()
        return ready

    async def _client_ready(self) -> bool:
        """The SDK loaded, when this server will use it; False (the reason recorded) when it
        cannot be."""
        if client_loaded():
            return True
        config = self._site.configs.get(self.name)
        if config is None or not config.enabled:
            return True  # the attempt says so; nothing needs the SDK for that
        try:
            await load_client()
        except TimeoutError:
            log.error("MCP server %s: the MCP client did not load in time", self.name)
            self.connect_failed(f"the MCP client did not load within {CLIENT_LOAD_SECONDS:g} s")
            return False
        except ImportError as exc:
            # The SDK, or a package it imports, is missing from this runtime: the reason
            # names what, for the status to show.
            log.error("MCP server %s: the MCP client cannot be loaded: %s", self.name, exc)
            self.connect_failed(f"the MCP client cannot be loaded here: {exc}"[:300])
            return False
        except Exception as exc:
            log.exception("MCP server %s: loading the MCP client failed", self.name)
            self.connect_failed(
                f"internal error while loading the MCP client ({type(exc).__name__})"
            )
            return False
        return True

    async def _attempt(self, step: list[str]) -> bool:
        async with self.lock:
            if self.conn is not None and self.conn.alive:
                return True
            step[0] = "reading the config"
            config = self._site.configs.get(self.name)
            if config is None or not config.enabled:
                self.disabled()
                return False
            self.config = config
            step[0] = "checking the URL"
            headers = await self._vetted_headers(config)
            if headers is None:
                return False
            step[0] = "loading the MCP client"
            connection = await connection_class()
            step[0] = "connecting"
            return await self._open(config, headers, connection)

    async def _vetted_headers(self, config: McpServerConfig) -> dict[str, str] | None:
        site = self._site
        try:
            async with asyncio.timeout(site.settings.mcp_connect_timeout_seconds):
                await check_url(config.url, site.settings.mode, site.resolver)
            return config.request_headers(site.secrets)
        except (UrlRefused, MissingSecret, TimeoutError) as exc:
            self.connect_failed(str(exc) or "the URL check timed out")
            return None

    async def _open(
        self,
        config: McpServerConfig,
        headers: dict[str, str],
        connection: type[McpConnection],
    ) -> bool:
        site = self._site
        timeout = site.settings.mcp_connect_timeout_seconds
        conn = connection(
            config.name,
            config.url,
            headers,
            on_lost=self._lost,
            on_tools_changed=self.tools_changed,
            # Each socket's address is checked again as it opens (DNS rebinding).
            connect_check=ConnectCheck(site.settings.mode, site.resolver),
            auth=None if site.oauth is None else site.oauth.bearer(config),
        )
        try:
            await conn.connect(timeout)
            specs = await conn.list_tools(timeout)
        except Exception as exc:
            self._open_failed(config, connection.connect_failure(exc))
            await conn.close()
            return False
        except BaseException:
            # Cancelled (the attempt's bound, or the server was dropped): close in the
            # background, so the cancel is not held up by a goodbye to the server.
            site.tasks.spawn_close(conn.close())
            raise
        if not self.current or self.state == "disabled":
            # Removed or switched off while this attempt ran: nobody wants it any more.
            await conn.close()
            return False
        self.connected(conn, specs, site.clock.monotonic())
        return True

    def _open_failed(self, config: McpServerConfig, failure: ConnectFailure) -> None:
        """Record why opening failed, and what can end that failure."""
        oauth = self._site.oauth
        reason = failure.reason
        if failure.challenge is not None and oauth is not None and config.uses_oauth:
            ended = oauth.store.challenged(config.name, config.url, failure.challenge)
            if ended:
                # What ended the last authorization says more to the user than the 401.
                reason = f"{reason}: {ended}"
            self.connect_failed(reason, "authorization")
        else:
            self.connect_failed(reason, "config" if failure.final else "retry")

    def _ready(self) -> None:
        self._site.scheduler.forget(self.name)
        self.watch()
        # The tools a turn would offer, now: the status shows renamed and left-out tools
        # from the moment the server is up, not from its first turn.
        self._site.tasks.spawn(self._site.catalogue.build())

    def _lost(self, conn: Connection) -> None:
        # The connection's owner ended while it was this server's: the server went away.
        if self.conn is conn and self.current:
            self.broken("connection lost")

    def broken(self, reason: str) -> None:
        """The connection is gone: close it and start the recovery cycle (once)."""
        tasks = self._site.tasks
        if tasks.closed:
            return
        conn = self.conn
        if not self.lost(reason):
            return
        if conn is not None:
            tasks.spawn_close(conn.close())
        tasks.spawn(self._site.scheduler.begin(self), server=self)

    # --- health ----------------------------------------------------------------------

    async def fresh_tools(self) -> list[RemoteToolSpec] | None:
        """The server's tools; listed again when stale or the health window passed.

        Never raises: a failure costs the turn this server's tools, and a
        connection failure starts recovery.
        """
        site = self._site
        conn = self.conn
        age = site.clock.monotonic() - self.checked_at
        fresh = age < site.settings.mcp_health_cache_seconds
        if self.tools is not None and fresh and not self.tools_stale:
            return self.tools
        if conn is None:
            return None
        try:
            specs = await conn.list_tools(site.settings.mcp_connect_timeout_seconds)
        except Exception as exc:
            return await self._listing_failed(conn, exc)
        self.tools_listed(specs, site.clock.monotonic())
        return specs

    async def _listing_failed(
        self, conn: Connection, exc: Exception
    ) -> list[RemoteToolSpec] | None:
        reason = conn.lost_reason(exc)
        refused = conn.refused_answer(exc)
        if reason is not None:
            self.broken(reason)
            if conn.session_lost(exc):
                return await self._new_session()
        elif refused is not None:
            # Over our bounds: no retry fixes that, so the server is failed for good.
            self.connect_failed(refused, "config")
            self.broken(refused)
        else:
            log.warning("MCP server %s could not list tools: %s", self.name, exc)
        return None

    async def _new_session(self) -> list[RemoteToolSpec] | None:
        # The server is there (it answered), so one attempt now is likely to succeed; if
        # not, the recovery `broken` started carries on as for any lost connection.
        if not await self.connect() or self.conn is None:
            return None
        log.info("MCP server %s forgot our session: a new one is open", self.name)
        return self.tools

    def watch(self) -> None:
        """Keep the server's change stream open while it is ready (no-op without one)."""
        conn = self.conn
        if conn is not None and self.state == "ready":
            conn.watch(lambda: self._watch_ended(conn))

    def _watch_ended(self, conn: Connection) -> None:
        # The stream ends when the server goes away, or for reasons of its own: a
        # health check tells which. The next turn opens it again if all is well.
        if self.conn is conn and self.state == "ready":
            self.health_unknown()
            self._site.tasks.spawn(self.fresh_tools())

    # --- calls -----------------------------------------------------------------------

    async def call(self, spec: RemoteToolSpec, arguments: dict[str, Any]) -> ToolResult:
        """Run one of this server's tools: a health check first, recovery on a dropped call."""
        if self.state != "ready" or self.conn is None:
            return ToolResult.error(
                f"{spec.name} is unavailable: the {self.name} server is not connected right now"
            )
        specs = await self.fresh_tools()
        if specs is None or self.conn is None:
            return ToolResult.error(
                f"{spec.name} is unavailable: the connection to the {self.name} server was "
                "lost; it is reconnecting"
            )
        if all(s.name != spec.name for s in specs):
            return ToolResult.error(f"{spec.name} is no longer offered by the {self.name} server")
        conn = self.conn
        try:
            result = await conn.call_tool(spec.name, arguments)
        except Exception as exc:
            lost = conn.lost_reason(exc)
            if lost is None:
                return self._call_failed(spec, exc)
            if conn.session_lost(exc):
                self.broken(lost)
                return await self._replay(spec, arguments)
            return await self._after_drop(spec, arguments, lost)
        self.answered(self._site.clock.monotonic())
        return result

    async def _after_drop(
        self, spec: RemoteToolSpec, arguments: dict[str, Any], lost: str
    ) -> ToolResult:
        self.broken(lost)
        if not spec.idempotent:
            return ToolResult.error(
                f"{spec.name} failed: the connection to the {self.name} server dropped during "
                "the call; it was not repeated, as it may not be safe to repeat. "
                "The server is reconnecting."
            )
        return await self._replay(spec, arguments)

    async def _replay(self, spec: RemoteToolSpec, arguments: dict[str, Any]) -> ToolResult:
        """Reconnect once at once and repeat a call that is safe to repeat."""
        dropped = ToolResult.error(
            f"{spec.name} failed: the connection to the {self.name} server dropped and "
            "could not be restored yet; it is reconnecting"
        )
        if not await self.connect() or self.conn is None:
            return dropped
        conn = self.conn
        try:
            result = await conn.call_tool(spec.name, arguments)
        except Exception as exc:
            lost = conn.lost_reason(exc)
            if lost is not None:
                self.broken(lost)
                return dropped
            return self._call_failed(spec, exc)
        log.info("repeated tool %s on a new connection after a dropped call", spec.name)
        return result

    def _call_failed(self, spec: RemoteToolSpec, exc: BaseException) -> ToolResult:
        return ToolResult.error(f"{spec.name} failed on the {self.name} server: {_short(exc)}")

    # --- transitions -----------------------------------------------------------------

    def connected(self, conn: Connection, specs: list[RemoteToolSpec], at: float) -> None:
        """A connection attempt succeeded: ready, with the tools it listed."""
        self._allow("ready", "connected")
        self.conn = conn
        self.instructions = conn.instructions
        self._take_tools(specs, at)
        self.last_error = None
        self.recovery.reset()
        self._enter("ready", f"{len(specs)} tools")

    def lost(self, reason: str) -> bool:
        """The connection is gone; False when the server was not up (nothing changes)."""
        if self.state not in ("ready", "connecting"):
            return False
        self.conn = None
        self.last_error = reason
        self._enter("reconnecting", f"lost: {reason}")
        return True

    def recovery_planned(self) -> None:
        """A recovery cycle began (`recovery` holds its plan): reconnecting, or failed at
        once."""
        self._enter_by_cycle(f"recovery planned ({self.last_error})")

    def retry_failed(self) -> None:
        """A scheduled retry failed (`recovery` counts it): reconnecting, or failed when
        spent."""
        self._enter_by_cycle(f"retry {self.recovery.attempts} failed ({self.last_error})")

    def half_open_failed(self) -> None:
        """The one attempt after the cool-down failed: the cool-down starts again."""
        self._enter("failed", f"half-open attempt failed ({self.last_error})")

    def disabled(self) -> None:
        """The config is gone or switched off: nothing connects any more."""
        if self.state != "disabled":
            self._enter("disabled", "config removed or disabled")

    # --- changes that are not transitions --------------------------------------------

    def connect_failed(self, reason: str, remedy: Remedy = "retry") -> None:
        """An attempt failed; the state is the recovery scheduler's to change.

        `remedy`: what can end the failure. Anything but a retry (no MCP endpoint there,
        answers over the caps, the server asking for the user's OAuth authorization) makes
        the scheduler stop rather than retry.
        """
        self.last_error = reason
        self.recovery.remedy = remedy

    def tools_listed(self, specs: list[RemoteToolSpec], at: float) -> None:
        """A fresh tool list (the health check passed); broadcast when the count changed."""
        before = len(self.tools or [])
        self._take_tools(specs, at)
        if len(specs) != before:
            self._site.status.notify()

    def tools_changed(self) -> None:
        """The server said its tool list changed: list it again before the next use."""
        self.tools_stale = True

    def answered(self, at: float) -> None:
        """A call succeeded: that counts as a passed health check."""
        self.checked_at = at

    def health_unknown(self) -> None:
        """Something suggests the server may be gone: check it before the next use."""
        self.checked_at = float("-inf")

    def quarantine(
        self,
        rejected: list[str],
        renamed: list[str] | None = None,
        offered: list[str] | None = None,
    ) -> None:
        """The tools left out this turn, those offered under another name, and the names
        all were offered under; broadcast when any changed."""
        renamed = renamed or []
        changed = rejected != self.quarantined or renamed != self.renamed
        if offered is not None and offered != self.offered:
            self.offered = offered
            changed = True
        if changed:
            self.quarantined = rejected
            self.renamed = renamed
            self._site.status.notify()

    def _take_tools(self, specs: list[RemoteToolSpec], at: float) -> None:
        if [s.name for s in self.tools or []] != [s.name for s in specs]:
            self.offered = None  # the names of the next turn's offer, until it is made
        self.tools = specs
        self.tools_stale = False
        self.checked_at = at
        # The tool set is the strongest evidence of what a server is; it can change.
        self.kind = classify_server([s.name for s in specs], self.config.kind)

    def _enter_by_cycle(self, why: str) -> None:
        if not self.recovery.exhausted:
            self._enter("reconnecting", why)
        elif self.recovery.remedy == "authorization":
            self._enter("needs_authorization", why)
        else:
            self._enter("failed", why)

    def _allow(self, state: McpState, why: str) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"MCP server {self.name}: {self.state} → {state} ({why})")

    def _enter(self, state: McpState, why: str) -> None:
        self._allow(state, why)
        # A server going down (or staying down after trying again) is a warning once, when
        # its state changes; the retries in between are information.
        level = logging.WARNING if state in FAILING and state != self.state else logging.INFO
        log.log(level, "MCP server %s: %s → %s, %s", self.name, self.state, state, why)
        self.state = state
        self._site.status.notify()


def _short(exc: BaseException, limit: int = 200) -> str:
    code = getattr(exc, "code", None)
    message = " ".join(str(exc).split())[:limit] or type(exc).__name__
    return f"{message} (code {code})" if isinstance(code, int) else message
