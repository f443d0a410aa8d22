"""One connection attempt to an MCP server, from its persisted config.

The URL is checked (SSRF rules) and the secret filled in on every attempt, so a
changed config or a rotated secret is picked up by the next retry. This is the
one place that imports the SDK-backed `albert.mcp.connection`, and only when a
server is actually connected.

Loading the SDK is a one-off of the process (or isolate), not the server's doing: it has
a bound of its own (CLIENT_LOAD_SECONDS) and never counts against an attempt's. Inside
Pyodide it takes seconds on a cold isolate and blocks the event loop while it runs, so a
clock started before it would leave the first attempt little or nothing of its connect
timeout (measured on workerd: the first object's connect timed out, the next took 0.1 s).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import sys
import threading
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import TYPE_CHECKING, Any

from albert.clock import Clock
from albert.mcp.config_store import McpConfigStore
from albert.mcp.configs import McpServerConfig, MissingSecret, SecretLookup
from albert.mcp.oauth_store import OAuthStore
from albert.mcp.reconnection_policy import ServerState
from albert.mcp.ssrf import ConnectCheck, Resolver, UrlRefused, check_url
from albert.settings import Settings

if TYPE_CHECKING:
    from albert.mcp.connection import McpConnection
    from albert.mcp.oauth_flow import OAuthFlow

log = logging.getLogger(__name__)

CONNECTION_MODULE = "albert.mcp.connection"
# The most a first load of the SDK may take before the attempt that needs it gives up.
CLIENT_LOAD_SECONDS = 120.0

# The module once it is fully imported. `sys.modules` cannot tell that: it holds a
# module from the moment its import *starts*, so another object reading it there while
# a thread is still importing gets a half-built module.
_loaded: ModuleType | None = None
_import_lock = threading.Lock()
# The import under way on its thread, which every caller awaits (None: none started, or
# the last one failed and the next caller tries again). Its own lock: the import's is held
# for the whole import, and the event loop must never wait on that.
_loading: concurrent.futures.Future[ModuleType] | None = None
_loading_lock = threading.Lock()


def _import_connection() -> ModuleType:
    """Import the connection module once; every other caller waits for that import."""
    global _loaded
    with _import_lock:
        if _loaded is None:
            # import_module returns the module only when its import has finished.
            _loaded = importlib.import_module(CONNECTION_MODULE)
        return _loaded


def _import_into(loading: concurrent.futures.Future[ModuleType]) -> None:
    global _loading
    try:
        loading.set_result(_import_connection())
    except BaseException as exc:
        with _loading_lock:
            _loading = None
        loading.set_exception(exc)


async def connection_module() -> ModuleType:
    """The SDK-backed connection module, imported off the event loop where threads exist.

    Importing `mcp` takes about a second; on a thread it does not hold up chat
    frames of the same object (or of other objects on the same loop). Any number of
    objects, on any number of loops, may ask at once: one thread of its own imports,
    and they all await that one import, holding no thread while they wait (the loop's
    worker threads stay free for its other work: name lookups, the model's connect).
    The thread is a daemon, so a stop never waits for it. Pyodide has no threads, so
    there it imports inline.
    """
    global _loading
    if _loaded is not None:
        return _loaded
    if sys.platform == "emscripten":
        return _import_connection()
    with _loading_lock:
        loading = _loading
        if loading is None:
            loading = _loading = concurrent.futures.Future()
            # Running from the start: a caller that gives up (its await cancelled) then
            # cannot cancel the one import everyone else awaits.
            loading.set_running_or_notify_cancel()
            threading.Thread(
                target=_import_into, args=(loading,), name="mcp-sdk-import", daemon=True
            ).start()
    return await asyncio.wrap_future(loading)


def client_loaded() -> bool:
    """True once the SDK-backed connection module is fully imported in this process."""
    return _loaded is not None


async def load_client(within: float = CLIENT_LOAD_SECONDS) -> None:
    """Import the SDK-backed module (once per process) within `within` seconds.

    Raises TimeoutError past the bound and ImportError where the SDK cannot load.
    """
    if _loaded is None:
        await asyncio.wait_for(connection_module(), within)


Spawn = Callable[[Coroutine[Any, Any, Any]], Any]


class Connector:
    """Opens a server's connection; the server's state machine records the outcome.

    An attempt never raises and never outlasts its bound (`attempt_seconds`: the
    connect timeout plus one retry delay), whatever it waits for: the URL check, the
    server, or another attempt on the same server. The SDK's first load comes before
    that clock starts, bounded by CLIENT_LOAD_SECONDS. Whatever went wrong becomes the
    server's `last_error`.
    """

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
        spawn: Spawn,
        attempt_seconds: float,
        oauth_store: OAuthStore | None = None,
        oauth: Callable[[], OAuthFlow] | None = None,
    ) -> None:
        """`oauth_store`/`oauth`: servers that asked for OAuth (their challenge is kept, and
        their tokens sent once the user authorized)."""
        self._store = store
        self._oauth_store = oauth_store
        self._oauth = oauth
        self._settings = settings
        self._secrets = secrets
        self._resolver = resolver
        self._clock = clock
        self._on_lost = on_lost
        self._on_ready = on_ready
        self._spawn = spawn
        self.attempt_seconds = attempt_seconds

    async def connect(self, server: ServerState) -> bool:
        """One attempt from the persisted config; True when the server is ready."""
        if not await self._client_ready(server):
            return False
        step = ["waiting for another attempt on this server"]
        try:
            async with asyncio.timeout(self.attempt_seconds):
                ready = await self._attempt(server, step)
        except TimeoutError:
            server.connect_failed(f"timed out after {self.attempt_seconds:g} s while {step[0]}")
            log.warning(
                "MCP server %s: attempt timed out after %g s while %s",
                server.name,
                self.attempt_seconds,
                step[0],
            )
            return False
        except Exception as exc:
            # A defect, not the server's doing: say so, and let recovery carry on.
            log.exception("MCP server %s: connection attempt failed unexpectedly", server.name)
            server.connect_failed(f"internal error while {step[0]} ({type(exc).__name__})")
            return False
        if ready:
            self._on_ready(server)
        return ready

    async def _client_ready(self, server: ServerState) -> bool:
        """The SDK loaded for a server that will use it; False (the reason recorded) when it
        cannot be."""
        if client_loaded():
            return True
        config = self._store.get(server.name)
        if config is None or not config.enabled:
            return True  # the attempt says so; nothing needs the SDK for that
        try:
            await load_client()
        except TimeoutError:
            log.error("MCP server %s: the MCP client did not load in time", server.name)
            server.connect_failed(f"the MCP client did not load within {CLIENT_LOAD_SECONDS:g} s")
            return False
        except ImportError as exc:
            # The SDK, or a package it imports, is missing from this runtime: the reason
            # names what, for the status to show.
            log.error("MCP server %s: the MCP client cannot be loaded: %s", server.name, exc)
            server.connect_failed(f"the MCP client cannot be loaded here: {exc}"[:300])
            return False
        except Exception as exc:
            log.exception("MCP server %s: loading the MCP client failed", server.name)
            server.connect_failed(
                f"internal error while loading the MCP client ({type(exc).__name__})"
            )
            return False
        return True

    async def _attempt(self, server: ServerState, step: list[str]) -> bool:
        async with server.lock:
            if server.conn is not None and server.conn.alive:
                return True
            step[0] = "reading the config"
            config = self._store.get(server.name)
            if config is None or not config.enabled:
                server.disabled()
                return False
            server.config = config
            step[0] = "checking the URL"
            headers = await self._vetted_headers(server, config)
            if headers is None:
                return False
            step[0] = "loading the MCP client"
            connection = await connection_module()
            step[0] = "connecting"
            return await self._open(server, config, headers, connection)

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
        self,
        server: ServerState,
        config: McpServerConfig,
        headers: dict[str, str],
        connection: ModuleType,
    ) -> bool:
        timeout = self._settings.mcp_connect_timeout_seconds
        oauth_store, auth = self._oauth_store, None
        if oauth_store is not None and self._oauth is not None and config.uses_oauth:
            if oauth_store.has_tokens(config.name, config.url):
                auth = self._oauth().bearer(config.name, config.url)
        conn = connection.McpConnection(
            config.name,
            config.url,
            headers,
            on_lost=lambda lost: self._on_lost(server, lost),
            on_tools_changed=server.tools_changed,
            # Each socket's address is checked again as it opens (DNS rebinding).
            connect_check=ConnectCheck(self._settings.mode, self._resolver),
            auth=auth,
        )
        try:
            await conn.connect(timeout)
            specs = await conn.list_tools(timeout)
        except Exception as exc:
            challenge = connection.authorization_challenge(exc)
            authorize = challenge is not None and oauth_store is not None and config.uses_oauth
            reason = connection.describe_error(exc)
            if authorize:
                assert oauth_store is not None and challenge is not None
                ended = oauth_store.challenged(config.name, config.url, challenge)
                if ended:
                    # What ended the last authorization says more to the user than the 401.
                    reason = f"{reason}: {ended}"
            server.connect_failed(reason, final=connection.is_final(exc), authorize=authorize)
            await conn.close()
            return False
        except BaseException:
            # Cancelled (the attempt's bound, or the server was dropped): close in the
            # background, so the cancel is not held up by a goodbye to the server.
            self._spawn(conn.close())
            raise
        if not server.current or server.state == "disabled":
            # Removed or switched off while this attempt ran: nobody wants it any more.
            await conn.close()
            return False
        server.connected(conn, specs, self._clock.monotonic())
        return True
