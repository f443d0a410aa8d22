"""A shorter way for a `tools/call` from the worker's MCP client, with the SDK's answers.

Through the SDK a tool call goes from `Client.call_tool` to the session, which builds the
request as a pydantic model and dumps it, to the JSON-RPC dispatcher, which mints an id,
opens a span, writes the message into an anyio memory stream and parks on another, to the
transport's writer task, which dumps the message again, spawns a task per POST in a task
group, reads the answer, parses it into a message model and writes it back through the
stream to the dispatcher, which resolves the waiter. Profiled, that machinery (the
streams, the tasks, the second model round) was most of the client's CPU per call.

`call_tool` here sends the same POST itself, on the session's own HTTP client, and reads
the answer in the calling task, calling the SDK's own pieces for every decision:

- the request: the same JSON-RPC body (the session's `_stamp` adds the `_meta` and the
  headers, ids come from the dispatcher's own counter, trace context is injected as the
  dispatcher does) and the transport's headers; sent through `stream_within_origin`, so
  redirects are followed exactly as the transport follows them;
- the answer, both kinds Streamable HTTP allows: a JSON body, or an event stream (its
  notifications and server requests handed to the dispatcher as the transport hands
  them); 202, unfollowed redirects, HTTP errors and unparsable bodies become the same
  JSON-RPC errors the transport makes of them;
- the result: the same inbound checks as `ClientSession.send_request` (TTL clamp, the
  method's result for the negotiated version, later-revision fields), the session's own
  result adapter, `validate_tool_result` (the output-schema check) and the `Client`'s
  input-required driver and `HEADER_MISMATCH` recovery.

It declines, before anything is sent, whenever the SDK would do something it does not:
a handshake-era session (session ids, cancellation by notification), a read timeout,
result claims of extensions, an OpenTelemetry tracer provider, or any SDK internal it
relies on missing (`Declined`; every private attribute it reads is checked before each call,
and an SDK without the private functions it imports leaves the connection without this
path); then the SDK path runs as before.

An event stream that ends without the response is resumed as the transport resumes it:
when an event carried an id, after the server's `retry:` hint (else the transport's default
delay) a GET with `Last-Event-ID` reads on, with the transport's bound on failed attempts
and its errors when they run out; with no id the call fails with `CONNECTION_CLOSED` ("SSE
stream ended without a response"). The SDK's own server never gets there at 2026-07-28,
the only revision this path runs at: it answers such a POST without its event store, so
its events carry no id (and a GET is 405); a server or gateway that tags them does. A
caller that gives up a call closes the response: at this revision that is the cancellation
signal, and the transport drops the dispatcher's `notifications/cancelled` instead of
posting it, so this path posts none either.
`MCP_CALL_FAST_PATH=false` turns it off.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import mcp_types
import pydantic_core
from mcp import Client
from mcp.client.session import _clamp_inbound_ttl, _later_revision_fields
from mcp.client.streamable_http import (
    DEFAULT_MAX_SSE_EVENT_SIZE,
    DEFAULT_RECONNECTION_DELAY_MS,
    LAST_EVENT_ID,
    MAX_RECONNECTION_ATTEMPTS,
    _unfollowed_redirect,
)
from mcp.shared._httpx_utils import sse_within_origin, stream_within_origin
from mcp.shared._otel import inject_trace_context
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import SessionMessage
from mcp_types import methods as _methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from pydantic import ValidationError

log = logging.getLogger(__name__)

_METHOD = "tools/call"
_ACCEPT = "application/json, text/event-stream"
# The transport starts its count of failed attempts again after every resumed stream that
# ends without the answer, so only the server bounds how often it resumes; this does.
_MAX_RESUMED_STREAMS = 100
_JSON_TYPES = (str, int, bool, type(None))


def _plain_json(value: Any, depth: int = 0) -> bool:
    """True when `value` dumps to itself in pydantic's JSON mode (else the SDK model dumps it)."""
    if depth > 64:
        return False
    if isinstance(value, _JSON_TYPES):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is dict:
        return all(type(k) is str and _plain_json(v, depth + 1) for k, v in value.items())
    if type(value) is list:
        return all(_plain_json(v, depth + 1) for v in value)
    return False


# Every SDK internal this path reads or calls, by owner. Checked before each call, so an
# SDK that renamed or dropped one sends the call its own way instead of failing midway.
_CLIENT_NEEDS = (
    "session",
    "protocol_version",
    "read_timeout_seconds",
    "_relist_tool",
    "_drive_input_required",
)
_SESSION_NEEDS = (
    "_stamp",
    "_dispatcher",
    "_negotiated_version",
    "_call_tool_adapter",
    "_on_request",
    "_on_notify",
    "validate_tool_result",
    "call_tool",
)
_DISPATCHER_NEEDS = ("_allocate_id", "_pending", "_dispatch")


def _missing(owner: Any, names: tuple[str, ...]) -> str | None:
    """The first of `names` that `owner` lacks, or None."""
    for name in names:
        if not hasattr(owner, name):
            return name
    return None


class _Mark:
    """Where an event stream can be resumed from: its last event id, the server's retry hint."""

    __slots__ = ("event_id", "retry_ms")

    def __init__(self, event_id: str | None, retry_ms: int | None) -> None:
        self.event_id = event_id
        self.retry_ms = retry_ms


class Declined(Exception):
    """The fast path does not take this call; nothing was sent."""


class CallFastPath:
    """Sends `tools/call` for one connected `Client` over its HTTP client."""

    def __init__(
        self,
        client: Client,
        http: httpx2.AsyncClient,
        url: str,
        on_transport_failed: Callable[[BaseException], None] = lambda _exc: None,
    ) -> None:
        self._client = client
        self._http = http
        self._url = url
        self._on_transport_failed = on_transport_failed

    def _usable(self) -> str | None:
        """Why the call must go through the SDK, or None."""
        client = self._client
        missing = _missing(client, _CLIENT_NEEDS)
        if missing is not None:
            return f"the SDK's Client has no {missing}"
        session = client.session
        missing = _missing(session, _SESSION_NEEDS)
        if missing is not None:
            return f"the SDK's session has no {missing}"
        missing = _missing(session._dispatcher, _DISPATCHER_NEEDS)
        if missing is not None:
            return f"the SDK's dispatcher has no {missing}"
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return "handshake-era protocol"
        if getattr(session, "_session_read_timeout_seconds", 0) is not None:
            return "a read timeout"
        if getattr(session, "_active_claims", True):
            return "result claims"
        if getattr(session, "_dispatcher", None) is None:
            return "no dispatcher"
        if not isinstance(
            trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
        ):
            return "a tracer provider"
        return None

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> Any:
        """The tool's `CallToolResult`, as `Client.call_tool` gives it; `Declined` if not taken."""
        reason = self._usable()
        if reason is not None:
            raise Declined(reason)
        client = self._client
        try:
            first = await self._send(name, arguments)
        except MCPError as mismatch:
            await self._relist_after(mismatch, name)
            first = await self._sdk_send(name, arguments, None, None)
        result = await client._drive_input_required(first, self._sdk_retry(name, arguments))
        if not isinstance(result, mcp_types.CallToolResult):  # pragma: no cover - claims declined
            raise Declined("a claimed result")
        return result

    async def _relist_after(self, error: MCPError, name: str) -> None:
        """The Client's recovery from `HEADER_MISMATCH`: re-list the tool; other errors raise."""
        if error.code != mcp_types.HEADER_MISMATCH:
            raise error
        import anyio

        try:
            with anyio.fail_after(self._client.read_timeout_seconds):
                await self._client._relist_tool(name)
        except (MCPError, TimeoutError, ValidationError) as relist_error:
            raise error from relist_error

    async def _sdk_send(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        responses: Any,
        state: str | None,
    ) -> Any:
        return await self._client.session.call_tool(
            name,
            arguments,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
            allow_claimed=True,
        )

    def _sdk_retry(
        self, name: str, arguments: dict[str, Any] | None
    ) -> Callable[[Any, str | None], Awaitable[Any]]:
        async def retry(responses: Any, state: str | None) -> Any:
            try:
                return await self._sdk_send(name, arguments, responses, state)
            except MCPError as mismatch:
                await self._relist_after(mismatch, name)
                return await self._sdk_send(name, arguments, responses, state)

        return retry

    def _message(self, name: str, arguments: dict[str, Any] | None) -> tuple[Any, dict[str, str]]:
        """The JSON-RPC request as the transport dumps it, and its per-message headers."""
        session = self._client.session
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            if _plain_json(arguments):
                params["arguments"] = arguments
            else:
                request = mcp_types.CallToolRequest(
                    params=mcp_types.CallToolRequestParams(name=name, arguments=arguments)
                )
                params = request.model_dump(by_alias=True, mode="json", exclude_none=True)["params"]
        data: dict[str, Any] = {"method": _METHOD, "params": params}
        opts: dict[str, Any] = {}
        session._stamp(data, opts)
        headers: dict[str, str] = opts.setdefault("headers", {})
        dispatcher = session._dispatcher
        request_id = dispatcher._allocate_id()
        while request_id in dispatcher._pending:
            request_id = dispatcher._allocate_id()
        out_params = dict(data["params"])
        out_meta = dict(out_params.get("_meta") or {})
        inject_trace_context(out_meta)
        if out_meta:
            out_params["_meta"] = out_meta
        else:
            out_params.pop("_meta", None)
        body = {"jsonrpc": "2.0", "id": request_id, "method": _METHOD, "params": out_params}
        return body, headers

    async def _send(self, name: str, arguments: dict[str, Any] | None) -> Any:
        body, stamped = self._message(name, arguments)
        request_id = body["id"]
        headers = {"accept": _ACCEPT, "content-type": "application/json"}
        version = stamped.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None:
            headers[MCP_PROTOCOL_VERSION_HEADER] = version
        headers.update(stamped)
        try:
            async with stream_within_origin(
                self._http, "POST", self._url, json=body, headers=headers
            ) as response:
                outcome = await self._read(response, request_id, version)
        except Exception as exc:
            # In the transport, an error escaping a POST ends its task group and so the
            # session: every waiter gets CONNECTION_CLOSED and the connection is lost.
            self._on_transport_failed(exc)
            raise MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed") from None
        if isinstance(outcome, mcp_types.ErrorData):
            raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
        result = self._parse(outcome)
        if isinstance(result, mcp_types.CallToolResult) and not result.is_error:
            # The session's own check against the tool's outputSchema (fast check first).
            await self._client.session.validate_tool_result(name, result)
        return result

    async def _read(
        self, response: httpx2.Response, request_id: Any, version: str | None
    ) -> dict[str, Any] | mcp_types.ErrorData:
        """The result or error the transport would hand the dispatcher for this POST."""
        status = response.status_code
        if status == 202:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message="server answered a request with 202 Accepted",
            )
        redirect = _unfollowed_redirect(response)
        if redirect is not None:
            log.warning(redirect)
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=redirect)
        content_type = response.headers.get("content-type", "").lower()
        if status >= 400:
            return await _error_answer(response, status, content_type)
        if content_type.startswith("application/json"):
            try:
                message = answer_message(await response.aread())
            except (httpx2.StreamError, ValidationError) as exc:
                log.exception("Error parsing JSON response")
                return mcp_types.ErrorData(
                    code=mcp_types.PARSE_ERROR, message=f"Failed to parse JSON response: {exc}"
                )
            outcome = _outcome(message, request_id)
            if outcome is None:
                await self._hand_over(message)
                return await _never()
            return outcome
        if content_type.startswith("text/event-stream"):
            return await self._read_events(response, version)
        log.error(f"Unexpected content type: {content_type}")
        return mcp_types.ErrorData(
            code=mcp_types.INVALID_REQUEST, message=f"Unexpected content type: {content_type}"
        )

    async def _read_events(
        self, response: httpx2.Response, version: str | None
    ) -> dict[str, Any] | mcp_types.ErrorData:
        """The answer in an event stream, resumed as the transport resumes it."""
        mark = _Mark(None, None)
        try:
            events = httpx2.EventSource(response, max_event_size=DEFAULT_MAX_SSE_EVENT_SIZE)
            outcome = await self._follow(events, mark)
            if outcome is not None:
                return outcome
        except httpx2.SSEError as exc:
            return mcp_types.ErrorData(
                code=mcp_types.CONNECTION_CLOSED, message=f"SSE stream failed: {exc}"
            )
        except Exception:
            log.debug("SSE stream ended", exc_info=True)
        if mark.event_id is None:
            return mcp_types.ErrorData(
                code=mcp_types.CONNECTION_CLOSED, message="SSE stream ended without a response"
            )
        log.info("SSE stream disconnected, reconnecting...")
        return await self._resume(mark.event_id, mark.retry_ms, version)

    async def _follow(
        self, events: httpx2.EventSource, mark: _Mark
    ) -> dict[str, Any] | mcp_types.ErrorData | None:
        """The answer on `events`, or None when they end without it; `mark` follows them."""
        async for sse in events:
            # Tracked before anything else, as the transport does: a priming event (no
            # data) or an unknown kind still moves the resume point.
            if sse.id:
                mark.event_id = sse.id
            if sse.retry is not None:
                mark.retry_ms = sse.retry
            outcome = await self._event(sse)
            if outcome is not None:
                await events.response.aclose()
                return outcome
        return None

    async def _resume(
        self, last_event_id: str, retry_ms: int | None, version: str | None
    ) -> dict[str, Any] | mcp_types.ErrorData:
        """The transport's `_handle_reconnection`: GETs with `Last-Event-ID` until answered."""
        import anyio

        headers = {"accept": _ACCEPT, "content-type": "application/json"}
        if version is not None:
            headers[MCP_PROTOCOL_VERSION_HEADER] = version
        attempt = 0
        for _ in range(_MAX_RESUMED_STREAMS):
            if attempt >= MAX_RECONNECTION_ATTEMPTS:
                log.debug(f"Max reconnection attempts ({MAX_RECONNECTION_ATTEMPTS}) exceeded")
                break
            delay_ms = retry_ms if retry_ms is not None else DEFAULT_RECONNECTION_DELAY_MS
            await anyio.sleep(delay_ms / 1000.0)
            # A failed attempt retries from where this one started, as the transport does.
            mark = _Mark(last_event_id, retry_ms)
            is_sse = False
            try:
                async with sse_within_origin(
                    self._http,
                    self._url,
                    headers={**headers, LAST_EVENT_ID: last_event_id},
                    max_event_size=DEFAULT_MAX_SSE_EVENT_SIZE,
                ) as events:
                    events.response.raise_for_status()
                    content_type = events.response.headers.get("content-type", "")
                    is_sse = content_type.partition(";")[0].strip().lower() == "text/event-stream"
                    outcome = await self._follow(events, mark)
                    if outcome is not None:
                        return outcome
                # Ended again without the answer: on from its last event, attempts anew.
                log.info("SSE stream disconnected, reconnecting...")
                last_event_id, retry_ms, attempt = mark.event_id or last_event_id, mark.retry_ms, 0
            except httpx2.SSEError as exc:
                if is_sse:
                    return mcp_types.ErrorData(
                        code=mcp_types.CONNECTION_CLOSED, message=f"SSE stream failed: {exc}"
                    )
                attempt += 1
            except Exception as exc:
                log.debug(f"Reconnection failed: {exc}")
                attempt += 1
        return mcp_types.ErrorData(
            code=mcp_types.CONNECTION_CLOSED,
            message="SSE stream ended and reconnection attempts were exhausted",
        )

    async def _event(
        self, sse: httpx2.ServerSentEvent
    ) -> dict[str, Any] | mcp_types.ErrorData | None:
        """The answer if this event is it; other messages go to the dispatcher (then None)."""
        if sse.event != "message":
            log.warning(f"Unknown SSE event: {sse.event}")
            return None
        if not sse.data:
            return None
        message = _parse_event(sse.data)
        if isinstance(message, mcp_types.ErrorData):
            return message
        if isinstance(message, mcp_types.JSONRPCResponse):
            return message.result
        if isinstance(message, mcp_types.JSONRPCError):
            return message.error
        await self._hand_over(message)
        return None

    async def _hand_over(self, message: Any) -> None:
        """A server notification or request on this POST's answer, to the SDK's dispatcher."""
        session = self._client.session
        await session._dispatcher._dispatch(
            SessionMessage(message), session._on_request, session._on_notify, None
        )

    def _parse(self, raw: dict[str, Any]) -> Any:
        """`ClientSession.send_request`'s checks and model for a `tools/call` result."""
        session = self._client.session
        _clamp_inbound_ttl(raw)
        version = session._negotiated_version or "2025-11-25"
        try:
            _methods.validate_server_result(_METHOD, version, raw)
        except KeyError:
            pass
        if not (foreign := _later_revision_fields(_METHOD, version)).isdisjoint(raw):
            raw = {key: value for key, value in raw.items() if key not in foreign}
        return session._call_tool_adapter.validate_python(raw, by_name=False)


_ANSWER_KEYS = frozenset(("jsonrpc", "id", "result"))


def answer_message(data: bytes) -> Any:
    """The JSON-RPC message of a JSON body, as the transport's `validate_json` gives it.

    A result's `dict[str, Any]` costs `validate_json` about three times what parsing the
    JSON costs (~0.1 ms of a search page's ~0.9 ms client CPU). For the usual answer (exactly
    `jsonrpc` "2.0", an int or string `id` and an object `result`) Python-mode validation of
    the parsed JSON makes the same `JSONRPCResponse` (the only union member such an object
    fits; its fields have no mode-specific validation); anything else, including JSON that
    does not parse, goes through `validate_json`, so its message or error is the SDK's own.
    """
    try:
        decoded = pydantic_core.from_json(data)
    except ValueError:
        decoded = None
    if (
        type(decoded) is dict
        and decoded.keys() == _ANSWER_KEYS
        and decoded["jsonrpc"] == "2.0"
        and type(decoded["id"]) in (int, str)
        and type(decoded["result"]) is dict
    ):
        return mcp_types.jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    return mcp_types.jsonrpc_message_adapter.validate_json(data, by_name=False)


def _outcome(message: Any, request_id: Any) -> dict[str, Any] | mcp_types.ErrorData | None:
    # Ids compare as the dispatcher compares them ("7" answers 7).
    if isinstance(message, mcp_types.JSONRPCResponse):
        return message.result if coerce_request_id(message.id) == request_id else None
    if isinstance(message, mcp_types.JSONRPCError):
        return message.error if coerce_request_id(message.id) == request_id else None
    return None


async def _error_answer(
    response: httpx2.Response, status: int, content_type: str
) -> mcp_types.ErrorData:
    """The error the transport makes of an HTTP error status."""
    # A spec-correct server may put the JSON-RPC error in a non-2xx body.
    if content_type.startswith("application/json"):
        try:
            parsed = mcp_types.jsonrpc_message_adapter.validate_json(
                await response.aread(), by_name=False
            )
            if isinstance(parsed, mcp_types.JSONRPCError):
                return parsed.error
        except (httpx2.StreamError, ValidationError):
            pass
    # Modern sessions have no session id: a 404 is the method not being found.
    if status == 404:
        return mcp_types.ErrorData(code=mcp_types.METHOD_NOT_FOUND, message="Not Found")
    return mcp_types.ErrorData(
        code=mcp_types.INTERNAL_ERROR, message="Server returned an error response"
    )


def _parse_event(data: str) -> Any:
    """The JSON-RPC message of one event, or the error the transport makes of a bad one."""
    try:
        return mcp_types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    except Exception as exc:
        log.exception("Error parsing SSE message")
        return mcp_types.ErrorData(
            code=mcp_types.PARSE_ERROR, message=f"Failed to parse SSE message: {exc}"
        )


async def _never() -> Any:
    # The SDK's waiter is never resolved by a body that does not answer it.
    import anyio

    await anyio.sleep_forever()
