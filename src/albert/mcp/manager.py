"""The MCP client manager of one client's object: connect, watch, recover, offer tools.

- Start: every enabled server is connected in the background; a turn never
  waits for more than a short, bounded moment (MCP_CONNECT_WAIT_SECONDS).
- Health: before a remote tool runs, and when a turn lists tools, the server is
  checked with a cheap tools/list, cached for MCP_HEALTH_CACHE_SECONDS.
- Recovery: a dropped connection (seen by exception type and MCP error code)
  is retried on the ReconnectPolicy schedule through the object's alarm, from
  the persisted config; when the retries are spent the server is `failed`
  until a message after the cool-down tries once more (half-open).
- Tools: remote tools are merged over local ones, inside an error guard; a
  server that cannot list its tools costs the turn nothing but those tools.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from albert.ai.prompt import ServerNote
from albert.chat.ports import SocketHub, TurnTools
from albert.mcp.alarms import AlarmPort
from albert.mcp.classify import ServerKind, classify_server, guidance_for
from albert.mcp.configs import McpConfigStore, McpServerConfig, MissingSecret, SecretLookup
from albert.mcp.reconnect import ReconnectPolicy, RetryState
from albert.mcp.remote_tool import RemoteTool, RemoteToolSpec
from albert.mcp.ssrf import ConnectCheck, Resolver, UrlRefused, check_url, system_resolver
from albert.protocol.frames import McpServerStatus, McpState, McpStatusFrame
from albert.settings import Settings
from albert.tools.base import Tool, ToolResult
from albert.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from albert.mcp.connection import McpConnection

log = logging.getLogger(__name__)

# An alarm may ring a hair early; a retry due within this margin counts as due.
DUE_MARGIN_SECONDS = 0.05


@dataclass
class McpTurnTools:
    """A turn's tools: local ones with every ready server's tools merged over them."""

    registry: ToolRegistry
    server_notes: Sequence[ServerNote] = field(default_factory=tuple)
    vault_data_available: bool = False


@dataclass
class ServerRuntime:
    """What the manager knows about one configured server."""

    config: McpServerConfig
    state: McpState = "connecting"
    conn: McpConnection | None = None
    retry: RetryState = field(default_factory=RetryState)
    tools: list[RemoteToolSpec] | None = None
    checked_at: float = float("-inf")
    tools_stale: bool = False
    kind: ServerKind | None = None
    instructions: str | None = None
    server_name: str = ""
    last_error: str | None = None
    quarantined: list[str] = field(default_factory=list)
    first_attempt: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def name(self) -> str:
        return self.config.name


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
        resolver: Resolver = system_resolver,
    ) -> None:
        self._store = store
        self._settings = settings
        self._local = list(local_tools)
        self._alarms = alarms
        self._secrets = secrets
        self._hub = hub
        self._resolver = resolver
        self.policy = ReconnectPolicy.from_settings(settings)
        self._runtimes: dict[str, ServerRuntime] = {}
        self._started = False
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- start and stop --------------------------------------------------------------

    def start(self) -> None:
        """Begin connecting to every enabled server in the background (idempotent)."""
        if self._started:
            return
        self._started = True
        if not self._store.has_any():
            return
        for config in self._store.all():
            self._add_runtime(config)

    def _add_runtime(self, config: McpServerConfig) -> None:
        runtime = ServerRuntime(config=config, state="connecting" if config.enabled else "disabled")
        self._runtimes[config.name] = runtime
        if config.enabled:
            runtime.first_attempt = self._spawn(self._initial_connect(runtime))

    async def reload(self, name: str) -> None:
        """A config was added, changed or removed: drop the old connection, start afresh."""
        self.start()
        old = self._runtimes.pop(name, None)
        if old is not None:
            await self._drop(old)
        config = self._store.get(name)
        if config is not None:
            self._add_runtime(config)
        self._notify()
        await self._arm_alarm()

    async def close(self) -> None:
        """Close every connection and stop background work."""
        for runtime in list(self._runtimes.values()):
            await self._drop(runtime)
        for task in list(self._tasks):
            task.cancel()

    async def _drop(self, runtime: ServerRuntime) -> None:
        runtime.retry.reset()
        if runtime.first_attempt is not None and not runtime.first_attempt.done():
            runtime.first_attempt.cancel()
        conn, runtime.conn = runtime.conn, None
        if conn is not None:
            await conn.close()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- connecting ------------------------------------------------------------------

    async def _initial_connect(self, runtime: ServerRuntime) -> None:
        if not await self._connect_once(runtime):
            await self._begin_recovery(runtime)

    async def _connect_once(self, runtime: ServerRuntime) -> bool:
        """One connection attempt from the persisted config; True when ready."""
        async with runtime.lock:
            if runtime.conn is not None and runtime.conn.alive:
                return True
            config = self._store.get(runtime.name)
            if config is None or not config.enabled:
                runtime.state = "disabled"
                return False
            runtime.config = config
            timeout = self._settings.mcp_connect_timeout_seconds
            try:
                async with asyncio.timeout(timeout):
                    await check_url(config.url, self._settings.mode, self._resolver)
                headers = config.request_headers(self._secrets)
            except (UrlRefused, MissingSecret, TimeoutError) as exc:
                runtime.last_error = str(exc) or "the URL check timed out"
                return False
            connection = await _load_connection_module()
            conn = connection.McpConnection(
                config.name,
                config.url,
                headers,
                on_lost=lambda lost: self._on_lost(runtime, lost),
                on_tools_changed=lambda: self._on_tools_changed(runtime),
                # Each socket's address is checked again as it opens (DNS rebinding).
                connect_check=ConnectCheck(self._settings.mode, self._resolver),
            )
            try:
                await conn.connect(timeout)
                specs = await conn.list_tools(timeout)
            except Exception as exc:
                runtime.last_error = connection.describe_error(exc)
                await conn.close()
                return False
            runtime.conn = conn
            runtime.instructions = conn.instructions
            runtime.server_name = conn.server_name
            self._take_tools(runtime, specs)
            runtime.state = "ready"
            runtime.last_error = None
            runtime.retry.reset()
        log.info("MCP server %s ready with %d tools", runtime.name, len(specs))
        self._ensure_watch(runtime)
        self._notify()
        return True

    def _ensure_watch(self, runtime: ServerRuntime) -> None:
        """Keep the server's change stream open while it is ready (no-op without one)."""
        conn = runtime.conn
        if conn is not None and runtime.state == "ready":
            conn.watch(lambda: self._on_watch_ended(runtime, conn))

    def _on_watch_ended(self, runtime: ServerRuntime, conn: McpConnection) -> None:
        # The stream ends when the server goes away, or for reasons of its own: a
        # health check tells which. The next turn opens it again if all is well.
        if runtime.conn is conn and runtime.state == "ready":
            runtime.checked_at = float("-inf")
            self._spawn(self._health_check(runtime))

    async def _health_check(self, runtime: ServerRuntime) -> None:
        await self._fresh_tools(runtime)

    def _take_tools(self, runtime: ServerRuntime, specs: list[RemoteToolSpec]) -> None:
        runtime.tools = specs
        runtime.tools_stale = False
        runtime.checked_at = time.monotonic()
        # The tool set is the strongest evidence of what a server is; it can change.
        runtime.kind = classify_server(
            f"{runtime.name} {runtime.server_name}", runtime.instructions, [s.name for s in specs]
        )

    def _on_tools_changed(self, runtime: ServerRuntime) -> None:
        runtime.tools_stale = True

    def _on_lost(self, runtime: ServerRuntime, conn: McpConnection) -> None:
        if runtime.conn is conn and self._runtimes.get(runtime.name) is runtime:
            self._mark_broken(runtime, "connection lost")

    def _mark_broken(self, runtime: ServerRuntime, reason: str) -> None:
        """The connection is gone: close it and start the recovery cycle (once)."""
        if runtime.state not in ("ready", "connecting"):
            return
        conn, runtime.conn = runtime.conn, None
        runtime.state = "reconnecting"
        runtime.last_error = reason
        log.warning("MCP server %s lost: %s", runtime.name, reason)
        if conn is not None:
            self._spawn(conn.close())
        self._spawn(self._begin_recovery(runtime))

    async def _begin_recovery(self, runtime: ServerRuntime) -> None:
        if self._runtimes.get(runtime.name) is not runtime or runtime.state in (
            "ready",
            "disabled",
        ):
            return
        now = time.time()
        runtime.retry.begin(self.policy, now)
        runtime.state = "failed" if runtime.retry.exhausted else "reconnecting"
        self._notify()
        await self._arm_alarm()

    async def _arm_alarm(self) -> None:
        due = [r.retry.next_at for r in self._runtimes.values() if r.retry.next_at is not None]
        try:
            if due:
                await self._alarms.set_alarm(int(min(due) * 1000))
            elif await self._alarms.get_alarm() is not None:
                await self._alarms.delete_alarm()
        except Exception:
            log.exception("could not set the MCP retry alarm")

    async def on_alarm(self) -> None:
        """The object's alarm rang: run every retry that is due, then plan the next."""
        self.start()
        now = time.time() + DUE_MARGIN_SECONDS
        due = [r for r in self._runtimes.values() if r.retry.due(now)]
        await asyncio.gather(*(self._retry(r) for r in due))
        await self._arm_alarm()

    async def _retry(self, runtime: ServerRuntime) -> None:
        runtime.retry.next_at = None
        if await self._connect_once(runtime) or runtime.state == "disabled":
            return
        runtime.retry.record_failure(self.policy, time.time())
        runtime.state = "failed" if runtime.retry.exhausted else "reconnecting"
        log.info(
            "MCP server %s retry %d failed (%s)",
            runtime.name,
            runtime.retry.attempts,
            runtime.last_error,
        )
        self._notify()

    async def _half_open(self, runtime: ServerRuntime) -> None:
        """After the cool-down, one more attempt; failing it restarts the cool-down."""
        if await self._connect_once(runtime):
            return
        runtime.retry.failed_at = time.time()
        self._notify()

    # --- a turn's tools --------------------------------------------------------------

    async def tools_for_turn(self) -> TurnTools:
        """Local tools, with every ready server's tools merged over them."""
        self.start()
        registry = ToolRegistry(self._local)
        if not self._runtimes:
            return McpTurnTools(registry=registry)
        now = time.time()
        probes = [
            r
            for r in self._runtimes.values()
            if r.state == "failed" and r.retry.half_open_ready(self.policy, now)
        ]
        if probes:
            await asyncio.gather(*(self._half_open(r) for r in probes))
        first = [
            r.first_attempt
            for r in self._runtimes.values()
            if r.state == "connecting" and r.first_attempt is not None
        ]
        if first and self._settings.mcp_connect_wait_seconds > 0:
            await asyncio.wait(first, timeout=self._settings.mcp_connect_wait_seconds)
        notes: list[ServerNote] = []
        vaults = False
        for runtime in list(self._runtimes.values()):
            if runtime.state != "ready":
                if runtime.state in ("reconnecting", "failed", "connecting"):
                    notes.append(
                        ServerNote(
                            server=runtime.name,
                            guidance="This server is not connected right now, so its tools "
                            "cannot be used in this answer; say so if the question needs them.",
                        )
                    )
                continue
            specs = await self._fresh_tools(runtime)
            if specs is None:
                continue
            self._ensure_watch(runtime)
            rejected = registry.merge(
                [RemoteTool(runtime.name, spec, self._invoke) for spec in specs],
                source=runtime.name,
            )
            quarantined = [f"{r.tool}: {r.reason}" for r in rejected]
            if quarantined != runtime.quarantined:
                runtime.quarantined = quarantined
                self._notify()
            kind = runtime.kind or "generic"
            vaults = vaults or kind == "vaults"
            notes.append(
                ServerNote(server=runtime.name, guidance=guidance_for(kind, runtime.instructions))
            )
        return McpTurnTools(registry=registry, server_notes=notes, vault_data_available=vaults)

    async def _fresh_tools(self, runtime: ServerRuntime) -> list[RemoteToolSpec] | None:
        """The server's tools; listed again when stale or the health window passed.

        The listing doubles as the health check. Never raises: a failure costs the
        turn this server's tools, and a connection failure starts recovery.
        """
        conn = runtime.conn
        fresh = time.monotonic() - runtime.checked_at < self._settings.mcp_health_cache_seconds
        if runtime.tools is not None and fresh and not runtime.tools_stale:
            return runtime.tools
        if conn is None:
            return None
        from albert.mcp.connection import describe_error, is_connection_error

        before = len(runtime.tools or [])
        try:
            specs = await conn.list_tools(self._settings.mcp_connect_timeout_seconds)
        except Exception as exc:
            if is_connection_error(exc) or isinstance(exc, TimeoutError):
                self._mark_broken(runtime, describe_error(exc))
            else:
                log.warning("MCP server %s could not list tools: %s", runtime.name, exc)
            return None
        self._take_tools(runtime, specs)
        if len(specs) != before:
            self._notify()
        return specs

    async def _invoke(
        self, server: str, spec: RemoteToolSpec, arguments: dict[str, Any]
    ) -> ToolResult:
        """Run a remote tool with a health check first and recovery on a dropped call."""
        runtime = self._runtimes.get(server)
        if runtime is None or runtime.state != "ready" or runtime.conn is None:
            return ToolResult.error(
                f"{spec.name} is unavailable: the {server} server is not connected right now"
            )
        specs = await self._fresh_tools(runtime)
        if specs is None:
            return ToolResult.error(
                f"{spec.name} is unavailable: the connection to the {server} server was lost; "
                "it is reconnecting"
            )
        if all(s.name != spec.name for s in specs):
            return ToolResult.error(f"{spec.name} is no longer offered by the {server} server")
        from albert.mcp.connection import McpConnection, describe_error, is_connection_error

        conn = runtime.conn
        assert isinstance(conn, McpConnection)
        try:
            result = await conn.call_tool(spec.name, arguments)
        except Exception as exc:
            if not is_connection_error(exc):
                return ToolResult.error(f"{spec.name} failed on the {server} server: {_short(exc)}")
            self._mark_broken(runtime, describe_error(exc))
            if not spec.idempotent:
                return ToolResult.error(
                    f"{spec.name} failed: the connection to the {server} server dropped during "
                    "the call; it was not repeated, as it may not be safe to repeat. "
                    "The server is reconnecting."
                )
            return await self._replay(runtime, spec, arguments)
        runtime.checked_at = time.monotonic()
        return result.to_tool_result()

    async def _replay(
        self, runtime: ServerRuntime, spec: RemoteToolSpec, arguments: dict[str, Any]
    ) -> ToolResult:
        """Reconnect once at once and repeat an idempotent call."""
        from albert.mcp.connection import describe_error, is_connection_error

        dropped = ToolResult.error(
            f"{spec.name} failed: the connection to the {runtime.name} server dropped and "
            "could not be restored yet; it is reconnecting"
        )
        if not await self._connect_once(runtime) or runtime.conn is None:
            return dropped
        try:
            result = await runtime.conn.call_tool(spec.name, arguments)
        except Exception as exc:
            if is_connection_error(exc):
                self._mark_broken(runtime, describe_error(exc))
                return dropped
            return ToolResult.error(
                f"{spec.name} failed on the {runtime.name} server: {_short(exc)}"
            )
        log.info("replayed idempotent tool %s after a dropped call", spec.name)
        return result.to_tool_result()

    # --- status ----------------------------------------------------------------------

    def status(self) -> list[McpServerStatus]:
        """Every configured server's state, in configuration order."""
        self.start()
        now = time.time()
        out = []
        for runtime in self._runtimes.values():
            next_at = runtime.retry.next_at
            out.append(
                McpServerStatus(
                    name=runtime.name,
                    state=runtime.state,
                    kind=runtime.kind if runtime.state == "ready" else None,
                    tools=len(runtime.tools or []) if runtime.state == "ready" else 0,
                    attempts=runtime.retry.attempts,
                    next_retry_in_seconds=None if next_at is None else max(0.0, next_at - now),
                    last_error=runtime.last_error,
                    quarantined=runtime.quarantined,
                )
            )
        return out

    def _notify(self) -> None:
        if self._hub is None:
            return
        text = McpStatusFrame(servers=self.status()).model_dump_json()
        for socket in self._hub.sockets():
            socket.send(text)


async def _load_connection_module() -> Any:
    """Import the SDK-backed connection module, off the event loop where threads exist.

    Importing `mcp` takes about a second; on a thread it does not hold up chat
    frames of the same object. Pyodide has no threads, so there it imports inline.
    """
    name = "albert.mcp.connection"
    if name not in sys.modules:
        try:
            await asyncio.to_thread(importlib.import_module, name)
        except RuntimeError:
            importlib.import_module(name)
    return sys.modules[name]


def _short(exc: BaseException, limit: int = 200) -> str:
    code = getattr(exc, "code", None)
    message = " ".join(str(exc).split())[:limit] or type(exc).__name__
    return f"{message} (code {code})" if isinstance(code, int) else message
