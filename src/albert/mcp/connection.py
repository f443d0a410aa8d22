"""One live connection to an MCP server over streamable HTTP, on the official `mcp` SDK.

This is the only module that imports `mcp`; `albert.mcp.connector` imports it
lazily, so an object with no server configured never loads the SDK.

The SDK's client is an async context manager whose transport runs in a task
group: when the server goes away, that group cancels whatever task entered it.
So a dedicated owner task enters the client and just waits; tool calls come
from other tasks and see a dropped connection as an `MCPError` with code
CONNECTION_CLOSED instead of being cancelled themselves.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from albert.mcp.output_check import Check, compile_check
from albert.mcp.remote_tool import RemoteCallResult, RemoteToolSpec
from albert.mcp.ssrf import ConnectCheck, UrlRefused

log = logging.getLogger(__name__)

MAX_TOOL_PAGES = 20
CLIENT_INFO = mcp_types.Implementation(name="albert", version="0.1.0")


class ConnectFailed(Exception):
    """Could not connect; the message is short and safe to show."""


class McpConnection:
    """A connected MCP client session owned by a background task."""

    def __init__(
        self,
        name: str,
        url: str,
        headers: dict[str, str],
        *,
        on_lost: Callable[[McpConnection], None],
        on_tools_changed: Callable[[], None],
        connect_check: ConnectCheck | None = None,
        fast_calls: bool = True,
    ) -> None:
        self.name = name
        self.url = url
        self._headers = headers
        self._connect_check = connect_check
        self._on_lost = on_lost
        self._on_tools_changed = on_tools_changed
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        self._closing = False
        self._connected = False
        self._watcher: asyncio.Task[None] | None = None
        self._fast_calls = fast_calls
        self._fast: Any = None
        self._listening = False

    # --- lifecycle -------------------------------------------------------------------

    async def connect(self, within: float) -> None:
        """Open the session within `within` seconds, or raise ConnectFailed."""
        self._owner = asyncio.create_task(self._own(within), name=f"mcp:{self.name}")
        self._owner.add_done_callback(self._owner_done)
        try:
            await asyncio.wait_for(self._ready.wait(), within + 1.0)
        except TimeoutError:
            await self.close()
            raise ConnectFailed(f"no answer within {within:g} s") from None
        if self._client is None:
            raise ConnectFailed(describe_error(self._error)) from None

    def _http_client(self, within: float) -> httpx2.AsyncClient:
        timeout = httpx2.Timeout(within, read=300.0)
        if sys.platform == "emscripten":
            # Under Pyodide the platform's fetch opens the connection (and refuses
            # private addresses itself); the SDK picks that transport on its own.
            return create_mcp_http_client(headers=self._headers, timeout=timeout)
        from albert.mcp.lean_transport import LeanHttpTransport

        # Plain HTTP goes out over the lean asyncio transport, TLS through httpx2's own.
        if self._connect_check is None:
            transport: httpx2.AsyncBaseTransport = LeanHttpTransport(httpx2.AsyncHTTPTransport())
        else:
            from albert.mcp.pinned_transport import CheckedTransport

            # Checked and pinned first, then sent as above (no proxy from the environment:
            # a proxy would resolve the name itself).
            transport = CheckedTransport(
                self._connect_check,
                LeanHttpTransport(httpx2.AsyncHTTPTransport(trust_env=False)),
            )
        return httpx2.AsyncClient(headers=self._headers, timeout=timeout, transport=transport)

    async def _own(self, within: float) -> None:
        http = self._http_client(within)
        client = Client(
            streamable_http_client(self.url, http_client=http),
            cache=None,
            read_timeout_seconds=None,
            client_info=CLIENT_INFO,
            message_handler=self._on_message,
        )
        try:
            async with http:
                async with asyncio.timeout(within):
                    await client.__aenter__()
                install_output_check(client.session)
                if self._fast_calls:
                    try:
                        from albert.mcp.call_fast_path import CallFastPath
                    except ImportError as exc:
                        # An SDK without a private function the path imports: calls go
                        # through the SDK alone rather than the connection failing.
                        log.warning("MCP tools/call through the SDK only: %s", exc)
                    else:
                        self._fast = CallFastPath(client, http, self.url, self._transport_failed)
                try:
                    self._client = client
                    self._connected = True
                    self._ready.set()
                    await self._stop.wait()
                finally:
                    self._client = None
                    self._fast = None
                    try:
                        await client.__aexit__(None, None, None)
                    except BaseException as exc:
                        self._error = exc
        except (Exception, asyncio.CancelledError) as exc:
            # A dead transport ends the owner in an exception group or a cancel.
            if self._error is None or not self._connected:
                self._error = exc
        finally:
            self._ready.set()

    def _transport_failed(self, exc: BaseException) -> None:
        # What the SDK's transport does when a POST fails: the session ends, as lost.
        if self._error is None:
            self._error = exc
        self._stop.set()

    def _owner_done(self, _task: asyncio.Task[None]) -> None:
        self._stop_watch()
        if not self._closing and self._connected:
            self._on_lost(self)

    # --- the change stream -----------------------------------------------------------

    def watch(self, on_ended: Callable[[], None]) -> bool:
        """Open the server's change stream (2026-07-28 `subscriptions/listen`), if it has one.

        Tool-list changes mark the cached tools stale. The stream also ends when
        the server goes away, so `on_ended` (a health check) notices a dead
        server between messages. False when the server offers no such stream.
        """
        client = self._client
        if client is None or (self._watcher is not None and not self._watcher.done()):
            return False
        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
            tools is not None and tools.list_changed
        ):
            return False
        self._listening = False
        self._watcher = asyncio.create_task(
            self._watch(client, on_ended), name=f"mcp-watch:{self.name}"
        )
        return True

    async def _watch(self, client: Client, on_ended: Callable[[], None]) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                self._listening = True
                async for _event in subscription:
                    self._on_tools_changed()
        except asyncio.CancelledError:
            return
        except Exception as exc:
            log.debug("change stream of %s ended: %s", self.name, describe_error(exc))
        if not self._closing:
            on_ended()

    def _stop_watch(self) -> None:
        # A session torn down under the stream leaves it waiting forever: cancel it.
        watcher, self._watcher = self._watcher, None
        if watcher is not None and not watcher.done():
            watcher.cancel()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._on_tools_changed()

    @property
    def alive(self) -> bool:
        """The session is open as far as we know."""
        return self._client is not None and self._owner is not None and not self._owner.done()

    async def close(self) -> None:
        """End the session; never raises."""
        self._closing = True
        self._stop_watch()
        self._stop.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 2.0)
            except (TimeoutError, asyncio.CancelledError, Exception):
                owner.cancel()

    # --- what the server offers ------------------------------------------------------

    @property
    def instructions(self) -> str | None:
        """The server's own instructions, if it sent any."""
        client = self._client
        return client.instructions if client is not None else None

    @property
    def server_name(self) -> str:
        """The name the server reports, or the configured one."""
        client = self._client
        info = client.server_info if client is not None else None
        return info.name if info is not None else self.name

    async def list_tools(self, within: float) -> list[RemoteToolSpec]:
        """Every tool the server lists now, schemas exactly as sent."""
        client = self._require()
        specs: list[RemoteToolSpec] = []
        cursor: str | None = None
        async with asyncio.timeout(within):
            for _ in range(MAX_TOOL_PAGES):
                page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                specs.extend(_spec(tool) for tool in page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return specs

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> RemoteCallResult:
        """Run one tool; connection failures raise, tool failures come back as results."""
        client = self._require()
        fast = self._fast
        watcher = self._watcher
        if fast is None or (watcher is not None and not watcher.done() and not self._listening):
            # While the change stream is being opened, a call goes through the SDK as
            # before: its transport sends the stream's request first, so the stream sees
            # a change the call makes.
            return _result(await client.call_tool(name, arguments))
        from albert.mcp.call_fast_path import Declined

        try:
            result = await fast.call_tool(name, arguments)
        except Declined as declined:
            log.debug("tools/call of %s through the SDK: %s", self.name, declined)
            result = await client.call_tool(name, arguments)
        return _result(result)

    @staticmethod
    def lost_reason(exc: BaseException) -> str | None:
        """Why the connection is gone, when `exc` says it is (by type and code); else None."""
        return describe_error(exc) if is_connection_error(exc) else None

    def _require(self) -> Client:
        client = self._client
        if client is None or not self.alive:
            raise MCPError(code=mcp_types.CONNECTION_CLOSED, message="not connected")
        return client


class _CheckedFirst:
    """The SDK's output validator with the fast one-sided check in front of it.

    A result the check shows valid yields no errors; any other result goes to the SDK's
    `jsonschema` validator, which decides and words the error exactly as before.
    """

    def __init__(self, check: Check, full: Any) -> None:
        self._check = check
        self._full = full

    def iter_errors(self, instance: Any) -> Any:
        try:
            if self._check(instance):
                return iter(())
        except RecursionError:
            pass  # a nesting deeper than the stack: the SDK's validator decides
        return self._full.iter_errors(instance)


def install_output_check(session: Any) -> bool:
    """Put the fast output check in front of the SDK's per-tool validator; False if it can't.

    The SDK builds one `jsonschema` validator per tool and schema
    (`ClientSession._output_schema_validator`, dropped when the listed schema changes); the
    check is compiled once per validator it builds. Should that hook ever go, results are
    validated by the SDK alone, as before.
    """
    build = getattr(session, "_output_schema_validator", None)
    if build is None or not callable(build):
        log.debug("MCP SDK without _output_schema_validator: output checked by jsonschema only")
        return False
    wrapped: dict[str, tuple[Any, Any]] = {}

    def validator(name: str, output_schema: dict[str, Any]) -> Any:
        full = build(name, output_schema)
        entry = wrapped.get(name)
        if entry is None or entry[0] is not full:
            check = compile_check(output_schema)
            entry = (full, full if check is None else _CheckedFirst(check, full))
            wrapped[name] = entry
        return entry[1]

    session._output_schema_validator = validator
    return True


def _spec(tool: mcp_types.Tool) -> RemoteToolSpec:
    annotations = tool.annotations
    return RemoteToolSpec(
        name=tool.name,
        description=tool.description or "",
        input_schema=tool.input_schema,
        idempotent=bool(annotations is not None and annotations.idempotent_hint),
        # Only an explicit hint asks the user: the spec's default (destructive unless
        # read-only) would put a question before nearly every unannotated tool.
        destructive=bool(
            annotations is not None
            and annotations.destructive_hint is True
            and annotations.read_only_hint is not True
        ),
    )


def _result(result: mcp_types.CallToolResult) -> RemoteCallResult:
    texts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        else:
            kind = getattr(block, "type", "content")
            texts.append(f"[{kind} content omitted: only text reaches the model]")
    structured = result.structured_content
    return RemoteCallResult(
        texts=texts,
        is_error=result.is_error,
        structured=structured if isinstance(structured, dict) else None,
    )


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """`exc` or the first exception of that kind among its groups, causes and contexts."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def is_connection_error(exc: BaseException) -> bool:
    """True when the exception means the connection is gone (by type and code, not text)."""
    if isinstance(exc, MCPError):
        return exc.code == mcp_types.CONNECTION_CLOSED
    if isinstance(exc, BaseExceptionGroup):
        return any(is_connection_error(e) for e in exc.exceptions)
    closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
    return isinstance(exc, (httpx2.TransportError, OSError, EOFError, *closed))


def describe_error(exc: BaseException | None) -> str:
    """A short, safe description of why a connection failed."""
    if exc is None:
        return "connection failed"
    if isinstance(exc, ConnectFailed):
        return str(exc)
    refused = _find(exc, UrlRefused)
    if refused is not None:
        return f"url refused when connecting: {refused}"
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return describe_error(exc.exceptions[0])
    if isinstance(exc, TimeoutError):
        return "timed out"
    return _describe_failure(exc)


def _describe_failure(exc: BaseException) -> str:
    """A protocol or transport failure in a few words."""
    if isinstance(exc, MCPError):
        if exc.code == mcp_types.CONNECTION_CLOSED:
            return "connection closed"
        return f"server error {exc.code}"
    if isinstance(exc, httpx2.ConnectError | ConnectionError):
        return "server unreachable"
    if isinstance(exc, httpx2.TransportError):
        return f"transport error ({type(exc).__name__})"
    if isinstance(exc, asyncio.CancelledError):
        return "connection closed"
    return type(exc).__name__
