"""One live connection to an MCP server over HTTP, on the official `mcp` SDK's public API.

The connection a server holds (`albert.mcp.lazy_connection.Connection`). At run time only
`albert.mcp.lazy_connection` imports this module, on the path that connects a server, so an
object with no server configured never loads the SDK (`albert.mcp.oauth_flow`, the other
module that imports `mcp`, is loaded only once a server asks for authorization).

The SDK's client is an async context manager whose transport runs in a task
group: when the server goes away, that group cancels whatever task entered it.
So a dedicated owner task enters the client and just waits; tool calls come
from other tasks and see a dropped connection as an `MCPError` with code
CONNECTION_CLOSED instead of being cancelled themselves.

Streamable HTTP first; a URL that refuses its POST with 404 or 405 is tried once with the
legacy HTTP+SSE transport (servers of the 2024-11-05 protocol), as other MCP clients do.
Every request goes through `ResponseGuard` (caps on what comes back, and what HTTP said).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from albert.mcp.lazy_connection import ConnectFailure
from albert.mcp.pinned_transport import transport_for
from albert.mcp.remote_tool import RemoteToolSpec
from albert.mcp.response_guard import (
    ANSWER_REFUSED,
    EVENT_CAP_BYTES,
    HttpRefusal,
    ResponseGuard,
)
from albert.mcp.ssrf import ConnectCheck, UrlRefused
from albert.tools.base import TextPart, ToolResult
from albert.tools.progress import Reporter, current_reporter

log = logging.getLogger(__name__)
server_log = logging.getLogger("albert.mcp.server")

MAX_TOOL_PAGES = 20
CLIENT_INFO = mcp_types.Implementation(name="albert", version="0.1.0")
# What the SDK's event streams may wait between events (a long tool call sends nothing).
READ_SECONDS = 300.0
Transport = Literal["streamable-http", "sse"]
# The MCP log levels kept (warning and up, as docs/mcp.md says), mapped onto Python's; the
# server's own word for the level stays in the message.
_LOG_LEVELS = {
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ConnectFailed(Exception):
    """Could not connect; the message is short and safe to show."""

    def __init__(
        self, message: str, *, final: bool = False, refusal: HttpRefusal | None = None
    ) -> None:
        super().__init__(message)
        self.final = final
        self.refusal = refusal


class SessionLost(Exception):
    """The server no longer knows our session (HTTP 404 with our session id).

    The spec's answer is a new session; the request was refused, not run, so repeating it
    on the new session is safe whatever the tool does.
    """


class AuthorizationLost(Exception):
    """The server refused our bearer during the session (HTTP 401), and no refreshed one
    was had: the connection is as good as gone, and reconnecting will say what it needs."""


class AnswerRefused(Exception):
    """The server's answer broke our bounds (too large, or compressed); nothing was parsed."""


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
        auth: httpx2.Auth | None = None,
    ) -> None:
        """`auth`: the OAuth bearer of a server that asked for it (albert.mcp.oauth_flow)."""
        self.name = name
        self.url = url
        self._headers = headers
        self._auth = auth
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
        self._guard: ResponseGuard | None = None
        self.transport: Transport = "streamable-http"

    # --- lifecycle -------------------------------------------------------------------

    async def connect(self, within: float) -> None:
        """Open the session within `within` seconds, or raise ConnectFailed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        await self._open("streamable-http", within)
        if self._client is not None:
            return
        refusal = self._guard.refusal if self._guard is not None else None
        first = describe_error(self._error, refusal)
        if refusal is None or refusal.status not in (404, 405) or self._closing:
            raise ConnectFailed(
                first, final=refusal is not None and refusal.permanent, refusal=refusal
            )
        # Refused as a POST endpoint: perhaps a legacy HTTP+SSE server.
        await self._open("sse", max(1.0, deadline - loop.time()))
        if self._client is not None:
            log.info("MCP server %s speaks the legacy HTTP+SSE transport", self.name)
            return
        raise ConnectFailed(
            f"{first}; not an HTTP+SSE endpoint either ({describe_error(self._error)})",
            final=True,
        )

    async def _open(self, transport: Transport, within: float) -> None:
        self.transport = transport
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error = None
        self._owner = asyncio.create_task(self._own(within), name=f"mcp:{self.name}")
        self._owner.add_done_callback(self._owner_done)
        try:
            await asyncio.wait_for(self._ready.wait(), within + 1.0)
        except TimeoutError:
            await self.close()
            raise ConnectFailed(f"no answer within {within:g} s") from None

    def _guarded_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """This connection's httpx2 client (the SDK's SSE transport asks for it this way)."""
        self._guard = ResponseGuard(transport_for(self._connect_check))
        return httpx2.AsyncClient(
            headers=headers if headers is not None else self._headers,
            timeout=timeout,
            auth=auth or self._auth,
            transport=self._guard,
        )

    async def _own(self, within: float) -> None:
        timeout = httpx2.Timeout(within, read=READ_SECONDS)
        http: httpx2.AsyncClient | None = None
        if self.transport == "sse":
            streams: Any = sse_client(
                self.url,
                headers=self._headers,
                timeout=within,
                sse_read_timeout=READ_SECONDS,
                httpx_client_factory=self._guarded_client,
            )
        else:
            http = self._guarded_client(timeout=timeout)
            # The guard cuts an event at EVENT_CAP_BYTES with an answer for its request; the
            # SDK's own (larger) limit would end the stream as if the connection were lost.
            streams = streamable_http_client(
                self.url, http_client=http, max_sse_event_size=2 * EVENT_CAP_BYTES
            )
        client = Client(
            streams,
            cache=None,
            read_timeout_seconds=None,
            client_info=CLIENT_INFO,
            message_handler=self._on_message,
            logging_callback=self._on_log,
            log_level="warning",
        )
        try:
            async with http if http is not None else contextlib.nullcontext():
                async with asyncio.timeout(within):
                    await client.__aenter__()
                try:
                    self._client = client
                    self._connected = True
                    self._ready.set()
                    await self._stop.wait()
                finally:
                    self._client = None
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

    def _owner_done(self, task: asyncio.Task[None]) -> None:
        if task is not self._owner:
            return
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
        self._watcher = asyncio.create_task(
            self._watch(client, on_ended), name=f"mcp-watch:{self.name}"
        )
        return True

    async def _watch(self, client: Client, on_ended: Callable[[], None]) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
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

    async def list_tools(self, within: float) -> list[RemoteToolSpec]:
        """Every tool the server lists now, schemas exactly as sent."""
        client = self._require()
        specs: list[RemoteToolSpec] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(within):
                for _ in range(MAX_TOOL_PAGES):
                    page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                    specs.extend(_spec(tool) for tool in page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except MCPError as exc:
            raise self._explained(exc) from exc
        return specs

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; connection failures raise, tool failures come back as results."""
        client = self._require()
        # The server's progress notifications arrive on the session's own task: take the
        # reporter of this call along (albert.tools.progress).
        reporter = current_reporter()
        progress = None if reporter is None else _progress_to(reporter)
        try:
            return _result(await client.call_tool(name, arguments, progress_callback=progress))
        except MCPError as exc:
            raise self._explained(exc) from exc

    def _explained(self, exc: MCPError) -> Exception:
        """What an SDK error means, with what the HTTP layer saw that the SDK does not keep."""
        guard = self._guard
        if guard is not None and guard.session_lost:
            return SessionLost("the server forgot our session; a new one is opened")
        if guard is not None and guard.refusal is not None and guard.refusal.status == 401:
            return AuthorizationLost("the server refused our authorization (HTTP 401)")
        if exc.code == ANSWER_REFUSED:
            return AnswerRefused(exc.message)
        return exc

    @staticmethod
    def connect_failure(exc: BaseException) -> ConnectFailure:
        """Why `connect` or the first tool list failed: in words, whether a retry can fix it,
        and the server's challenge when it asked for authorization."""
        return ConnectFailure(describe_error(exc), is_final(exc), authorization_challenge(exc))

    @staticmethod
    def lost_reason(exc: BaseException) -> str | None:
        """Why the connection is gone, when `exc` says it is (by type and code); else None."""
        if isinstance(exc, SessionLost | AuthorizationLost):
            return str(exc)
        return describe_error(exc) if is_connection_error(exc) else None

    @staticmethod
    def refused_answer(exc: BaseException) -> str | None:
        """The reason when `exc` is an answer our bounds refused; else None."""
        return str(exc) if isinstance(exc, AnswerRefused) else None

    @staticmethod
    def session_lost(exc: BaseException) -> bool:
        """True when the server forgot the session: the request never ran, a retry is safe."""
        return isinstance(exc, SessionLost)

    def _require(self) -> Client:
        client = self._client
        if client is None or not self.alive:
            raise MCPError(code=mcp_types.CONNECTION_CLOSED, message="not connected")
        return client

    async def _on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        # The server's own log lines, kept in ours (bounded: a server writes the text). We
        # ask for warning and up, but at the 2025 handshakes a server may send every level
        # whatever was asked: what is below is dropped here, not written at info.
        level = _LOG_LEVELS.get(params.level)
        if level is None:
            return
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        server_log.log(level, "MCP server %s [%s]: %s", self.name, params.level, data[:1000])


def _progress_to(reporter: Reporter) -> Any:
    async def report(progress: float, total: float | None, message: str | None) -> None:
        reporter(progress, total, message)

    return report


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
        task_required=tool.execution is not None and tool.execution.task_support == "required",
    )


def _block_text(block: Any) -> str:
    """One content block as the text the model reads."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        kind = resource.mime_type or "binary"
        return f"[resource {resource.uri} ({kind}) omitted: only text reaches the model]"
    if isinstance(block, mcp_types.ResourceLink):
        about = f": {block.description}" if block.description else ""
        return f"[resource link {block.name} <{block.uri}>{about}]"
    kind = getattr(block, "type", "content")
    mime = getattr(block, "mime_type", None)
    what = f"{kind} content ({mime})" if mime else f"{kind} content"
    return f"[{what} omitted: only text reaches the model]"


def _result(result: mcp_types.CallToolResult) -> ToolResult:
    """The server's answer as our one result type (an empty answer still says something)."""
    texts = [_block_text(block) for block in result.content]
    structured = result.structured_content
    if not texts and structured is not None:
        # A result with only structured content: the model reads it as JSON.
        texts = [json.dumps(structured, ensure_ascii=False)]
    return ToolResult(
        content=[TextPart(text=t) for t in texts or ["(the tool returned no text)"]],
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
    if isinstance(exc, SessionLost | AuthorizationLost):
        return True
    if isinstance(exc, MCPError):
        return exc.code == mcp_types.CONNECTION_CLOSED
    if isinstance(exc, BaseExceptionGroup):
        return any(is_connection_error(e) for e in exc.exceptions)
    closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
    return isinstance(exc, (httpx2.TransportError, OSError, EOFError, *closed))


def authorization_challenge(exc: BaseException) -> str | None:
    """The server's WWW-Authenticate when it refused us for want of authorization ("" when
    it sent none); None for any other failure."""
    refusal = exc.refusal if isinstance(exc, ConnectFailed) else None
    if refusal is None:
        return None
    challenge = refusal.www_authenticate or ""
    if refusal.status == 401 or (refusal.status == 403 and "insufficient_scope" in challenge):
        return challenge
    return None


def is_final(exc: BaseException) -> bool:
    """True for a failure to connect that no retry can fix."""
    return bool(getattr(exc, "final", False)) or isinstance(exc, AnswerRefused)


def describe_error(exc: BaseException | None, refusal: HttpRefusal | None = None) -> str:
    """A short, safe description of why a connection failed, in plain words (the browser
    shows it as the server's `last_error`; the log names it with each change of state)."""
    if refusal is not None and (exc is None or not isinstance(exc, ConnectFailed)):
        return refusal.describe()
    if exc is None:
        return "connection failed"
    if isinstance(exc, ConnectFailed | AnswerRefused | SessionLost | AuthorizationLost):
        return str(exc)
    refused = _find(exc, UrlRefused)
    if refused is not None:
        return f"url refused when connecting: {refused}"
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return describe_error(exc.exceptions[0])
    if isinstance(exc, TimeoutError):
        return "timed out (the server did not answer in time)"
    return _describe_failure(exc)


def _describe_failure(exc: BaseException) -> str:
    """A protocol or transport failure in a few words."""
    if isinstance(exc, MCPError):
        if exc.code == mcp_types.CONNECTION_CLOSED:
            return "connection closed"
        if exc.code == ANSWER_REFUSED:
            return exc.message[:300]
        return f"the server answered with an error (MCP code {exc.code})"
    if isinstance(exc, httpx2.ConnectError | ConnectionError):
        return "server unreachable (check its URL, and that it is running)"
    if isinstance(exc, httpx2.TransportError):
        return f"the connection to the server broke ({type(exc).__name__})"
    if isinstance(exc, asyncio.CancelledError):
        return "connection closed"
    return f"connection failed ({type(exc).__name__})"
