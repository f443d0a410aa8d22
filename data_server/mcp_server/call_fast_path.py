"""A shorter way through the MCP endpoint for `tools/call` POSTs, with the SDK's answers.

The data server serves the 2026-07-28 protocol with JSON responses: one POST, one JSON-RPC
request, one JSON body back. For a `tools/call`, the SDK's path around the tool (the
session manager, its ASGI ladder, the runner and its middleware, the JSON-RPC envelope as
a model, a stdlib `json.dumps` of the whole page, Starlette's response) cost about as much
CPU as the tool itself. `ToolCallFastPath` sits in front of the MCP route and answers such
a request itself, calling the SDK's own pieces for every decision:

- the same checks, in the same order, through the same functions: body size, Host/Origin
  and Content-Type (`TransportSecurityMiddleware`), Accept, the JSON body and its
  JSON-RPC envelope, duplicated routing headers, the protocol-version ladder
  (`classify_inbound_request`), the `Mcp-Param-*` header check, the method's params;
- the tool runs through the server's own `_handle_call_tool` (the SDK's tool manager, its
  argument handling and its mapping of exceptions to error results), its result is shaped
  by the runner's own `_serialize` (the protocol sieve, `resultType`, the `serverInfo`
  stamp), and a handler error becomes the same JSON-RPC error through the SDK's mapping.

Anything it does not fully handle goes to the SDK unchanged, with the body replayed as
read: other methods and paths, notifications, batches, GET/DELETE, the handshake-era
protocol, any request a check would refuse (the SDK then gives its own refusal), a
`requestState`, a tool that takes a context, a configured tracer or auth, extensions, cache
hints, extra middleware. A test sends the same requests to the app with and without this
path and compares status, headers and JSON.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import pydantic_core
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server._streamable_http_modern import _write
from mcp.server.connection import Connection
from mcp.server.request_state import RequestStateBoundary
from mcp.server.runner import ServerRunner, modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.inbound import (
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types import JSONRPCError, JSONRPCRequest
from mcp_types import methods as _methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION
from opentelemetry import trace
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

_METHOD = "tools/call"
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")
_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()
_JSON_HEADERS = b"application/json"


class _Fallback(Exception):
    """The request is the SDK's to answer."""


def _tracing_off() -> bool:
    """No tracer provider is configured, so the SDK's span around a call records nothing."""
    provider = trace.get_tracer_provider()
    return isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


class ToolCallFastPath:
    """ASGI middleware answering well-formed `tools/call` POSTs on `path` as the SDK would."""

    def __init__(self, app: ASGIApp, *, mcp: Any, path: str) -> None:
        self.app = app
        self.mcp = mcp
        self.path = path
        self._ready: bool | None = None
        self._runner: ServerRunner[Any] | None = None
        self._security: TransportSecurityMiddleware | None = None
        self.answered = 0  # requests this path answered itself (the rest went to the SDK)

    def _eligible(self) -> bool:
        """Worked out once the session manager exists: is this server one the path can serve?"""
        if self._ready is not None:
            return self._ready
        lowlevel = self.mcp._lowlevel_server
        manager = getattr(lowlevel, "_session_manager", None)
        if manager is None:
            return False
        entry = lowlevel.get_request_handler(_METHOD)
        middleware = [type(m) for m in lowlevel.middleware]
        tools = self.mcp._tool_manager.list_tools()
        self._ready = (
            manager.json_response
            and self.mcp.settings.auth is None
            and not self.mcp._extensions
            and not lowlevel.cache_hints.get(_METHOD)
            and entry is not None
            and entry.handler == self.mcp._handle_call_tool
            and middleware == [OpenTelemetryMiddleware, RequestStateBoundary]
            and all(t.context_kwarg is None and not t.resolved_params for t in tools)
        )
        if self._ready:
            self._manager = manager
            self._max_body = manager.asgi_app.max_body_size
            self._security = TransportSecurityMiddleware(manager.security_settings)
            # `_serialize` reads the server (cache hints, the serverInfo stamp) and the
            # version it is given; the connection is never read there.
            self._runner = ServerRunner(
                lowlevel, Connection.from_envelope(LATEST_MODERN_VERSION, None, None), None
            )
            self._entry = entry
        return self._ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != self.path
            or scope.get("root_path")
            or not self._eligible()
            or self._manager._task_group is None
        ):
            await self.app(scope, receive, send)
            return
        version = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == _VERSION_HEADER), None
        )
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS or not _tracing_off():
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        declared = request.headers.get("content-length")
        try:
            if declared is None or int(declared) > self._max_body:
                raise ValueError
        except ValueError:
            await self.app(scope, receive, send)
            return
        assert self._security is not None
        if (
            await self._security.validate_request(request, is_post=True) is not None
            or not check_accept_headers(request)[0]
        ):
            await self.app(scope, receive, send)
            return
        read: list[Message] = []
        body = await self._read_body(receive, read)
        if body is None:
            await self.app(scope, _replay(read, receive), send)
            return
        try:
            req, typed, protocol = self._checked(request, body)
        except _Fallback:
            await self.app(scope, _replay(read, receive), send)
            return
        self.answered += 1
        await self._serve(req, typed, protocol, scope, receive, send)

    async def _read_body(self, receive: Receive, read: list[Message]) -> bytes | None:
        """The whole body within the size limit, or None (what was read is in `read`)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _checked(self, request: Request, body: bytes) -> tuple[JSONRPCRequest, Any, str]:
        """The request, its typed params and protocol version, if the SDK would run the tool."""
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            raise _Fallback from None
        if not isinstance(decoded, dict) or "id" not in decoded or decoded.get("method") != _METHOD:
            raise _Fallback
        try:
            req = JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            raise _Fallback from None
        if find_duplicated_routing_header(request.headers.items()) is not None:
            raise _Fallback
        verdict = classify_inbound_request(decoded, headers=dict(request.headers))
        if isinstance(verdict, InboundLadderRejection):
            raise _Fallback
        params = req.params
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            raise _Fallback
        if params.get("requestState") is not None:
            raise _Fallback  # the SDK unseals and checks it
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise _Fallback
        if arguments or any(h.startswith(_PARAM_PREFIX) for h in request.headers):
            # The SDK compares `Mcp-Param-*` headers with the schema its lookup gives (or,
            # without a lookup, one from the tools listing); with no schema, nothing to
            # compare. The fast path serves only that case.
            lookup = self.mcp._lowlevel_server.get_tool_input_schema
            if lookup is None:
                raise _Fallback
            try:
                schema = lookup(params["name"])
            except Exception:
                raise _Fallback from None
            if schema is not None:
                raise _Fallback
        protocol = verdict.protocol_version
        try:
            _methods.validate_client_request(_METHOD, protocol, params)
            typed = self._entry.params_type.model_validate(params, by_name=False)
        except (ValidationError, KeyError):
            raise _Fallback from None
        if self.mcp._tool_manager.get_tool(typed.name) is None:
            raise _Fallback  # the SDK's unknown-tool answer
        return req, typed, protocol

    async def _serve(
        self,
        req: JSONRPCRequest,
        typed: Any,
        protocol: str,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """Run the tool as the SDK's handler does and write the JSON-RPC answer."""
        assert self._runner is not None
        try:
            # The SDK's own handler: the tool manager, its exception-to-result mapping,
            # and this server's hand-over of the result already dumped. Our tools take no
            # context, so the request context it would be given is never read.
            result = await self.mcp._handle_call_tool(None, typed)
            wire = shape_result(self._runner, protocol, result)
        except Exception as exc:
            error = JSONRPCError(jsonrpc="2.0", id=req.id, error=modern_error_data(exc))
            await _write(error, scope, receive, send)
            return
        envelope = {"jsonrpc": "2.0", "id": req.id, "result": wire}
        try:
            # pydantic-core writes what the SDK's JSON-mode dump and `json.dumps` give
            # (non-finite floats as null), as UTF-8 instead of \u escapes.
            body = pydantic_core.to_json(envelope, inf_nan_mode="null")
        except pydantic_core.PydanticSerializationError:
            # A string pydantic-core cannot encode (a lone surrogate): the SDK's encoding.
            body = _sdk_json(envelope)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-length", str(len(body)).encode("latin-1")),
                    (b"content-type", _JSON_HEADERS),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def shape_result(runner: ServerRunner[Any], protocol: str, result: Any) -> dict[str, Any]:
    """The runner's wire form of a `tools/call` result, without walking our structured content.

    A dict result is this server's own (`wire_form` of a `ToolResult`): its structured content
    is an output model's JSON-mode dump, and the protocol types it `dict[str, Any]`, so the
    runner's sieve (validate, then dump in JSON mode) can only copy it. The sieve runs on the
    rest of the result with an empty placeholder in its place, and the page goes back in.
    """
    structured = result.get("structuredContent") if isinstance(result, dict) else None
    if not isinstance(structured, dict):
        return runner._serialize(_METHOD, protocol, result)
    wire = runner._serialize(_METHOD, protocol, {**result, "structuredContent": {}})
    if wire.get("structuredContent") != {}:  # not the shape this relies on: the SDK's way
        return runner._serialize(_METHOD, protocol, result)
    wire["structuredContent"] = structured
    return wire


def _sdk_json(envelope: dict[str, Any]) -> bytes:
    """The envelope as the SDK encodes it."""
    from mcp_types import JSONRPCResponse

    message = JSONRPCResponse.model_validate(envelope)
    dumped = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(dumped, separators=(",", ":")).encode("utf-8")


def _replay(read: list[Message], receive: Receive) -> Receive:
    """`receive` with the messages already read handed out first, as they came."""
    pending = list(read)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay
