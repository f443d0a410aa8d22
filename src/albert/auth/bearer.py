"""Who a request comes from: its bearer token, verified against the deployment's keys."""

from __future__ import annotations

from albert.auth.tokens import Identity, verify_token
from albert.settings import Settings
from albert.web import HttpRequest


def bearer_token(request: HttpRequest) -> str:
    """The token from `Authorization: Bearer …`; on a WebSocket upgrade only, also from
    `?token=` (browsers cannot set headers on a WebSocket). Elsewhere a query token is
    ignored: URLs end up in logs, histories and Referer headers."""
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip()
    if request.headers.get("upgrade", "").lower() == "websocket":
        return request.query.get("token", "")
    return ""


def looks_like_jwt(token: str) -> bool:
    """True for a token of three dot-separated parts (a JWS, albert.auth.host_jwt); session
    tokens have two."""
    return token.count(".") == 2


def authenticate(request: HttpRequest, settings: Settings, now: int) -> Identity:
    """The verified identity of a request, or TokenError."""
    return verify_token(bearer_token(request), settings.signing_keys(), now=now)
