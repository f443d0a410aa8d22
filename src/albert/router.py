"""The worker router's decisions, free of platform types.

It answers health and session requests itself. Every other API request must carry
a valid signed token; the router verifies it before any Durable Object is touched
and names the object from the verified identity only.
"""

from typing import NamedTuple

from albert.auth.bearer import authenticate, bearer_token
from albert.auth.session_api import MAX_SESSION_BODY, REVOKE_PATH, me
from albert.auth.tenants import DEFAULT_TENANT, PublicTenant
from albert.auth.tokens import Identity, TokenError, issue_token, new_client_id
from albert.mcp.oauth_state import CALLBACK_PATH, open_state
from albert.protocol.http import SessionRequest, SessionResponse
from albert.settings import Settings
from albert.web import BadRequest, HttpRequest, HttpResponse, parse_body

# What answers the chat (the demo planner or a model at a host), for the empty screen.
ANSWERER_PATH = "/api/answerer"


class ForwardToObject(NamedTuple):
    """Send the request to the object of this id (an MCP server's OAuth callback, whose
    state the router verified: albert.mcp.oauth_state)."""

    object_id: str


class Forward(NamedTuple):
    """Send the request to this verified client's object."""

    identity: Identity

    @property
    def object_name(self) -> str:
        return self.identity.object_name


def _unauthorized(reason: str) -> HttpResponse:
    return HttpResponse.error(401, "unauthorized", reason, headers={"www-authenticate": "Bearer"})


def route(
    request: HttpRequest,
    settings: Settings,
    now: int,
    identity: Identity | None = None,
    *,
    now_ms: int | None = None,
) -> HttpResponse | Forward | ForwardToObject:
    """Answer the request here, or say which verified client's object gets it.

    `identity`: the caller, verified already (a host JWT, albert.auth.gateway); `now_ms`:
    the same moment in milliseconds (a new session's issue time), `now` * 1000 if not given.
    """
    if request.path == "/healthz":
        return HttpResponse.json({"ok": True})
    if request.path == "/api/session":
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        return _session(request, settings, now, now * 1000 if now_ms is None else now_ms)
    if not request.path.startswith("/api/"):
        return HttpResponse.error(404, "not_found", "no such route")
    if request.path == CALLBACK_PATH:
        return _oauth_callback(request, settings)
    try:
        identity = identity or authenticate(request, settings, now)
    except TokenError as exc:
        return _unauthorized(f"{exc.reason}: call POST /api/session for a token")
    if request.headers.get("upgrade", "").lower() == "websocket" and not settings.origin_allowed(
        request.headers.get("origin")
    ):
        return HttpResponse.error(403, "forbidden_origin", "this origin may not open the chat")
    return _verified(request, settings, identity)


def _verified(
    request: HttpRequest, settings: Settings, identity: Identity
) -> HttpResponse | Forward:
    """Where a verified caller's request goes: answered here, or to its object."""
    if request.path == REVOKE_PATH:
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        if identity.anonymous:
            return HttpResponse.error(
                403, "not_signed_in", "only a signed-in user's sessions can be revoked"
            )
    elif request.path == ANSWERER_PATH:
        if request.method != "GET":
            return HttpResponse.error(405, "method_not_allowed", "use GET")
        # Imported on the path that uses it: the router's other requests never need it.
        from albert.ai.answerer import answerer

        return HttpResponse.json(answerer(settings.for_tenant(identity.tenant)))
    elif request.path == "/api/me" and identity.anonymous:
        # A signed-in session may have been revoked, which only the user's object knows:
        # its /api/me is answered there, after the check (albert.chat.routes).
        return HttpResponse.json(me(identity, settings))
    return Forward(identity=identity)


def _oauth_callback(request: HttpRequest, settings: Settings) -> HttpResponse | ForwardToObject:
    """An authorization server sent the browser back: to the object its state names."""
    if request.method != "GET":
        return HttpResponse.error(405, "method_not_allowed", "use GET")
    state = open_state(request.query.get("state", ""), settings.signing_keys())
    if state is None:
        return HttpResponse.error(
            400, "invalid_state", "this authorization link is not valid here; start it again"
        )
    return ForwardToObject(object_id=state.object_id)


def _session(request: HttpRequest, settings: Settings, now: int, now_ms: int) -> HttpResponse:
    """Issue a token: a new client, or a renewal for the client of a valid token."""
    keys = settings.signing_keys()
    if not keys:
        return HttpResponse.error(503, "not_configured", "session signing is not configured")
    try:
        body = parse_body(request, SessionRequest, MAX_SESSION_BODY)
    except BadRequest as exc:
        return HttpResponse.error(exc.status, exc.error, exc.detail)
    tenants = settings.tenants()
    try:
        current = authenticate(request, settings, now) if bearer_token(request) else None
    except TokenError:
        current = None  # an invalid token on a session request just starts a new client
    tenant_key = body.tenant or (current.tenant if current else DEFAULT_TENANT)
    if tenant_key not in tenants:
        return HttpResponse.error(400, "unknown_tenant", f"no tenant named {tenant_key!r}")
    renewal = current if current and current.tenant == tenant_key else None
    client_id = renewal.client_id if renewal else new_client_id()
    expires_at = now + settings.session_ttl_seconds
    user_id = renewal.user_id if renewal else None
    # A renewal keeps its session's start, so a revocation covers every token it renews to.
    issued_at_ms = renewal.issued_at_ms if renewal and renewal.issued_at_ms is not None else now_ms
    if renewal is not None and user_id is not None:
        # A signed-in session lives no longer than the host's token it came from.
        expires_at = min(expires_at, renewal.expires_at)
    token = issue_token(
        keys[0],
        client_id=client_id,
        tenant=tenant_key,
        expires_at=expires_at,
        issued_at_ms=issued_at_ms,
        user_id=user_id,
    )
    return HttpResponse.json(
        SessionResponse(
            client_id=client_id,
            token=token,
            expires_at=expires_at,
            tenant=PublicTenant(key=tenant_key, name=tenants[tenant_key].name),
            user_id=user_id,
        ),
        status=201,
    )
