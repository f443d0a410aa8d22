"""The connection an MCP server holds, typed, and its SDK-backed class loaded on first use.

`Connection` is what `albert.mcp.server.McpServer` uses of a live session;
`albert.mcp.connection.McpConnection`, on the `mcp` SDK, is the one that exists.
`connection_class` hands out that class, imported with the first server that connects and
never at module level, so an object with no server configured never loads the SDK.

Loading the SDK is a one-off of the process (or isolate), not the server's doing: it has
a bound of its own (CLIENT_LOAD_SECONDS) and never counts against an attempt's. Inside
Pyodide it takes seconds on a cold isolate and blocks the event loop while it runs, so a
clock started before it would leave the first attempt little or nothing of its connect
timeout (measured on workerd: the first object's connect timed out, the next took 0.1 s).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from albert.mcp.remote_tool import RemoteToolSpec
from albert.tools.base import ToolResult

if TYPE_CHECKING:
    from albert.mcp.connection import McpConnection

# The most a first load of the SDK may take before the attempt that needs it gives up.
CLIENT_LOAD_SECONDS = 120.0


class Connection(Protocol):
    """A live session with one MCP server, as the server that owns it uses it."""

    @property
    def alive(self) -> bool:
        """The session is open as far as we know."""
        ...

    @property
    def instructions(self) -> str | None:
        """The server's own instructions, if it sent any."""
        ...

    async def list_tools(self, within: float) -> list[RemoteToolSpec]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...

    def watch(self, on_ended: Callable[[], None]) -> bool:
        """Keep the server's change stream open; `on_ended` when it ends."""
        ...

    async def close(self) -> None: ...

    def lost_reason(self, exc: BaseException) -> str | None:
        """Why the connection is gone, when `exc` says it is; else None."""
        ...

    def refused_answer(self, exc: BaseException) -> str | None:
        """The reason when `exc` is an answer our bounds refused; else None."""
        ...

    def session_lost(self, exc: BaseException) -> bool:
        """True when the server forgot the session (the request never ran)."""
        ...


class ConnectFailure(NamedTuple):
    """Why opening a connection failed, as the server's recovery needs to know it."""

    reason: str  # short, and safe to show
    final: bool  # no retry can fix it
    # The server's WWW-Authenticate when it refused us for want of authorization ("" when
    # it sent none); None for any other failure.
    challenge: str | None


async def connection_class() -> type[McpConnection]:
    """The SDK-backed connection class, imported once per process (see `connection_module`)."""
    module = await connection_module()
    connection: type[McpConnection] = module.McpConnection
    return connection


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
            # The import statement gives the module only once its import has finished.
            from albert.mcp import connection

            _loaded = connection
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
