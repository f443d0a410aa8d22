"""Every HTTP route a client's chat object answers: ROUTES, the table below its handlers.

The Durable Object (durable_objects/chat.py) converts the platform's request, verifies the
session token of a route that takes one (`takes_session`), and accepts the socket of an
upgrade admitted here (`AcceptSocket`). Everything else about a request is decided here,
in this order:

1. a route without a session (an MCP server's OAuth callback) is answered first;
2. a session a revocation covers is refused (401 `session_revoked`, albert.chat.sessions);
3. the session's own routes (who it is, revoking, the router's check, the claim steps)
   are answered even once the object's work was claimed;
4. anything else, once the object was claimed, is 410 `session_claimed`
   (albert.chat.claims);
5. a WebSocket upgrade, whatever its path, is the chat socket;
6. the client's API (threads, events, MCP servers): its requests name the client for
   analytics, and a change under `/api/mcp/` counts against the client's MCP changes
   before it is routed, so a refused one costs as much as one made;
7. a path no route takes is 404; a method its routes do not take, 405 naming theirs.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

from albert.auth.session_api import me
from albert.auth.tokens import Identity
from albert.chat.claims import MAX_IMPORT_BYTES
from albert.chat.socket_policy import SocketMeta
from albert.request_bodies import MAX_REQUEST_BODY_BYTES
from albert.web import BadRequest, HttpRequest, HttpResponse

if TYPE_CHECKING:
    from albert.chat.service import ChatService


# Who may call a route, and whether it outlives a claim of the object's work. (Plain
# classes and strings here, not dataclasses or an Enum: the worker imports this module at
# start, and making those classes costs milliseconds.)
Access = Literal["no session", "session", "client"]
# No session token: the router verified what the request carries instead.
NO_SESSION: Access = "no session"
# A verified session, about the session itself: answered even once claimed.
SESSION: Access = "session"
# A verified session of the object's client: 410 once its work was claimed.
CLIENT: Access = "client"


class AcceptSocket:
    """The answer to an admitted upgrade: accept the WebSocket, keeping `attachment` with it
    (albert.chat.socket_policy.SocketMeta), then tell the service it opened."""

    __slots__ = ("attachment",)

    def __init__(self, attachment: str) -> None:
        self.attachment = attachment


Answer = HttpResponse | AcceptSocket


class Call:
    """One request to a route: the object's service, the request, its verified caller (None
    only on a route without a session) and the path's parameters."""

    __slots__ = ("caller", "chat", "params", "request")

    def __init__(
        self,
        chat: ChatService,
        request: HttpRequest,
        caller: Identity | None,
        params: dict[str, str],
    ) -> None:
        self.chat = chat
        self.request = request
        self.caller = caller
        self.params = params

    @property
    def identity(self) -> Identity:
        """The verified caller of a route that takes a session (`answer` makes sure)."""
        if self.caller is None:
            raise RuntimeError("a route that takes a session was called without one")
        return self.caller


Handler = Callable[[Call], Awaitable[Answer]]

_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _is_id(text: str) -> bool:
    return 0 < len(text) <= 64 and _ID_CHARS.issuperset(text)


def _is_server_name(text: str) -> bool:
    # A segment is never a slash; what else a name may hold its config checks.
    return 0 < len(text) <= 64


# What a path parameter may be; a path whose parameter is not one has no route.
_PARAMETERS: dict[str, Callable[[str], bool]] = {
    "thread": _is_id,
    "turn": _is_id,
    "server": _is_server_name,
}
# `{name...}` at a path's end: the rest of it, slashes and all, maybe empty.
_REST = "..."


class Route:
    """Methods (empty: any) and a path (`{name}` a segment, `{name...}` the rest), and the
    handler that answers them.

    `upgrade`: only a WebSocket upgrade takes it; `signed_in`: only a signed-in session
    (an anonymous one's is answered by the router); `max_body`: the largest body the object
    reads for it (albert.request_bodies).
    """

    __slots__ = (
        "_prefix",
        "_segments",
        "access",
        "handler",
        "max_body",
        "methods",
        "path",
        "signed_in",
        "upgrade",
    )

    def __init__(
        self,
        methods: tuple[str, ...],
        path: str,
        handler: Handler,
        *,
        access: Access = CLIENT,
        upgrade: bool = False,
        signed_in: bool = False,
        max_body: int = MAX_REQUEST_BODY_BYTES,
    ) -> None:
        segments = tuple(path.split("/"))
        unknown = [
            s
            for s in segments
            if s.startswith("{") and not s.endswith(_REST + "}") and s[1:-1] not in _PARAMETERS
        ]
        if unknown:
            raise ValueError(f"{path}: no rule for the parameters {unknown}")
        self.methods = methods
        self.path = path
        self.handler = handler
        self.access = access
        self.upgrade = upgrade
        self.signed_in = signed_in
        self.max_body = max_body
        self._segments = segments
        # Most paths are told apart by their text before the first parameter: only those
        # that share it are split (a lookup runs on every request).
        self._prefix = path.partition("{")[0]

    def match(self, path: str) -> dict[str, str] | None:
        """The path's parameters when it is this route's path, else None."""
        if self._prefix == self.path:
            return {} if path == self.path else None
        if not path.startswith(self._prefix):
            return None
        given = path.split("/")
        params: dict[str, str] = {}
        for index, segment in enumerate(self._segments):
            if index >= len(given):
                return None
            if segment.startswith("{") and segment.endswith(_REST + "}"):
                params[segment[1 : -len(_REST) - 1]] = "/".join(given[index:])
                return params
            if segment.startswith("{"):
                name = segment[1:-1]
                if not _PARAMETERS[name](given[index]):
                    return None
                params[name] = given[index]
            elif segment != given[index]:
                return None
        return params if len(given) == len(self._segments) else None

    def takes(self, method: str) -> bool:
        """True when the route answers this method."""
        return not self.methods or method in self.methods


# --- the handlers: each hands its request to the part of the object that answers it ---


async def mcp_oauth_callback(call: Call) -> Answer:
    """An MCP server's authorization came back; the nonce in its state must be one this
    object is waiting for (albert.mcp.oauth_state)."""
    if call.chat.mcp is None:
        return HttpResponse.error(404, "not_found", "no MCP servers here")
    return await call.chat.mcp.api().callback(call.request)


async def who_am_i(call: Call) -> Answer:
    """The verified session, without its token."""
    return HttpResponse.json(me(call.identity, call.chat.settings))


async def revoke_sessions(call: Call) -> Answer:
    """Sign the user out everywhere (albert.chat.sessions)."""
    return await call.chat.sessions.handle_revoke(call.request, call.identity)


async def session_check(call: Call) -> Answer:
    """The router's question before renewing a signed-in session: not revoked (a revoked
    one was refused before any route)."""
    return HttpResponse.json({"ok": True})


async def claim_step(call: Call) -> Answer:
    """One step of moving anonymous work into a signed-in user's object."""
    steps = call.chat.claims.steps()
    return await steps.answer(call.params["step"], call.request, call.identity)


async def open_chat_socket(call: Call) -> Answer:
    """Admit the chat socket, its expiry and session kept with it for every later frame."""
    identity = call.identity
    opened_at_ms = call.chat.clock.now_ms()
    meta = SocketMeta(
        opened_at_ms=opened_at_ms,
        expires_at=identity.expires_at,
        # A socket opened with the host's JWT is a session from now on.
        issued_at_ms=opened_at_ms if identity.issued_at_ms is None else identity.issued_at_ms,
    )
    return AcceptSocket(attachment=meta.encode())


async def list_threads(call: Call) -> Answer:
    """A page of threads, or those `?q=` finds."""
    return await call.chat.threads.list_threads(call.request)


async def create_thread(call: Call) -> Answer:
    """A new thread."""
    return await call.chat.threads.create_thread(call.request)


async def load_thread(call: Call) -> Answer:
    """A thread and a page of its messages."""
    return await call.chat.threads.load_thread(call.request, call.params["thread"])


async def update_thread(call: Call) -> Answer:
    """Rename or pin a thread."""
    return await call.chat.threads.update_thread(call.request, call.params["thread"])


async def delete_thread(call: Call) -> Answer:
    """Delete a thread, its running turn cancelled first."""
    return await call.chat.threads.delete_thread(call.params["thread"])


async def export_thread(call: Call) -> Answer:
    """A thread as a download."""
    return await call.chat.threads.export_thread(call.request, call.params["thread"])


async def set_feedback(call: Call) -> Answer:
    """Thumbs up or down on a turn's answer."""
    params = call.params
    return await call.chat.threads.set_feedback(call.request, params["thread"], params["turn"])


async def track_events(call: Call) -> Answer:
    """The browser's analytics events, checked against the catalog."""
    return await call.chat.events.handle(call.request)


async def mcp_servers(call: Call) -> Answer:
    """The client's MCP servers: their status, adding, reading, removing, authorizing,
    reconnecting (the MCP API reads the path again for the server's name)."""
    if call.chat.mcp is None:
        return _no_route(call.request)
    return await call.chat.mcp.handle(call.request)


ANY: tuple[str, ...] = ()
GET, POST, PUT, PATCH, DELETE = ("GET",), ("POST",), ("PUT",), ("PATCH",), ("DELETE",)

# Every route of the object, looked up in this order: the first route whose path matches
# decides (for a method none of that path's routes take: 405).
ROUTES: tuple[Route, ...] = (
    # No session: the router verified the state's MAC and brought the request here by the
    # object id it names (albert.router).
    Route(GET, "/api/mcp/oauth/callback", mcp_oauth_callback, access=NO_SESSION),
    # The session's own.
    Route(ANY, "/api/me", who_am_i, access=SESSION, signed_in=True),
    Route(POST, "/api/session/revoke", revoke_sessions, access=SESSION),
    Route(ANY, "/internal/session/check", session_check, access=SESSION),
    # A claim import is another object's whole export, sent by the router.
    Route(
        POST,
        "/internal/claim/{step...}",
        claim_step,
        access=SESSION,
        max_body=MAX_IMPORT_BYTES,
    ),
    # The chat socket: the browser opens /api/chat; the router forwards an upgrade of any
    # /api/ path.
    Route(ANY, "/{path...}", open_chat_socket, upgrade=True),
    # The client's API.
    Route(GET, "/api/threads", list_threads),
    Route(POST, "/api/threads", create_thread),
    Route(GET, "/api/threads/{thread}", load_thread),
    Route(PATCH, "/api/threads/{thread}", update_thread),
    Route(DELETE, "/api/threads/{thread}", delete_thread),
    Route(GET, "/api/threads/{thread}/export", export_thread),
    Route(PUT, "/api/threads/{thread}/turns/{turn}/feedback", set_feedback),
    Route(POST, "/api/events", track_events),
    Route(GET, "/api/mcp/status", mcp_servers),
    Route(GET, "/api/mcp/servers", mcp_servers),
    Route(POST, "/api/mcp/servers", mcp_servers),
    Route(DELETE, "/api/mcp/servers", mcp_servers),
    Route(GET, "/api/mcp/servers/{server}", mcp_servers),
    Route(DELETE, "/api/mcp/servers/{server}", mcp_servers),
    Route(POST, "/api/mcp/servers/{server}/authorize", mcp_servers),
    Route(POST, "/api/mcp/servers/{server}/reconnect", mcp_servers),
)
# Under these prefixes a path no route takes is the API's own "no such route".
_API_PREFIXES = ("/api/threads/", "/api/mcp/")
_MCP_PREFIX = "/api/mcp/"
_CHANGES = frozenset({"POST", "DELETE", "PATCH", "PUT"})


class _Found:
    """The route that takes a request, or (none) the access and methods of its path's."""

    __slots__ = ("access", "allowed", "params", "route")

    def __init__(
        self,
        route: Route | None,
        params: dict[str, str],
        access: Access,
        allowed: tuple[str, ...] = (),
    ) -> None:
        self.route = route
        self.params = params
        self.access = access
        self.allowed = allowed


def _find(request: HttpRequest, caller: Identity | None) -> _Found:
    """The route that answers the request, or (no route) the methods its path takes."""
    upgrade = request.headers.get("upgrade", "").lower() == "websocket"
    matched: Route | None = None
    allowed: list[str] = []
    for route in ROUTES:
        if (route.upgrade and not upgrade) or (
            route.signed_in and (caller is None or caller.anonymous)
        ):
            continue
        if matched is not None and route.path != matched.path:
            continue
        params = route.match(request.path)
        if params is None:
            continue
        if route.takes(request.method):
            return _Found(route, params, route.access)
        matched = matched or route
        allowed.extend(route.methods)
    access = matched.access if matched is not None else CLIENT
    return _Found(None, {}, access, tuple(allowed))


def takes_session(request: HttpRequest) -> bool:
    """True unless the request's route is answered without a session token."""
    return _find(request, None).access != NO_SESSION


def body_cap(path: str) -> int:
    """The largest body a request to `path` may carry."""
    for route in ROUTES:
        if not route.upgrade and route.match(path) is not None:
            return route.max_body
    return MAX_REQUEST_BODY_BYTES


async def answer(chat: ChatService, request: HttpRequest, caller: Identity | None) -> Answer:
    """Answer a request to the object; `caller`: its verified session (None where the
    object's glue found no route that takes one)."""
    found = _find(request, caller)
    if found.access != NO_SESSION:
        refused = _session_refusal(chat, caller)
        if refused is not None:
            return refused
    if found.access == CLIENT and caller is not None:
        refused = _client_refusal(chat, request, caller, found.route)
        if refused is not None:
            return refused
    if found.route is None:
        return _method_not_allowed(found.allowed) if found.allowed else _no_route(request)
    try:
        return await found.route.handler(Call(chat, request, caller, found.params))
    except BadRequest as exc:
        return HttpResponse.error(exc.status, exc.error, exc.detail)


def _session_refusal(chat: ChatService, caller: Identity | None) -> HttpResponse | None:
    if caller is None:
        return HttpResponse.error(
            401, "unauthorized", "missing token", headers={"www-authenticate": "Bearer"}
        )
    return chat.sessions.refusal(caller)


def _client_refusal(
    chat: ChatService, request: HttpRequest, caller: Identity, route: Route | None
) -> HttpResponse | None:
    gone = chat.claims.gone()
    if gone is not None:
        return gone
    if route is not None and route.upgrade:
        return None
    # The API's requests say whose object this is, so events of its sockets carry it too.
    chat.analytics.identify(caller.client_id)
    return _mcp_change_refusal(chat, request)


def _mcp_change_refusal(chat: ChatService, request: HttpRequest) -> HttpResponse | None:
    """429 when the client changed its MCP servers too often lately; None to go on."""
    if chat.mcp is None or request.method not in _CHANGES:
        return None
    if not request.path.startswith(_MCP_PREFIX):
        return None
    wait = chat.mcp_changes.take()
    if wait is None:
        return None
    return HttpResponse.error(
        429,
        "rate_limited",
        f"too many MCP server changes; try again in {wait:g} s",
        headers={"retry-after": str(math.ceil(wait))},
    )


def _method_not_allowed(methods: tuple[str, ...]) -> HttpResponse:
    listed = methods[0] if len(methods) == 1 else f"{', '.join(methods[:-1])} or {methods[-1]}"
    return HttpResponse.error(405, "method_not_allowed", f"use {listed}")


def _no_route(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(_API_PREFIXES):
        return HttpResponse.error(404, "not_found", "no such route")
    return HttpResponse.error(404, "not_found", f"no route for {request.method} {request.path}")
