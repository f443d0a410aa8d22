"""The router with both kinds of bearer token: host JWTs here, session tokens in the router.

A request carrying a host JWT is verified here (asynchronously: the keys may have to be
fetched) before the router (albert.router) decides, with the verified identity, where it
goes; `POST /api/session` with a JWT is a sign-in (albert.auth.sign_in). A renewal of a
signed-in session asks the user's object first whether the session was revoked
(albert.chat.sessions). Every other request goes to the router as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert.auth.bearer import bearer_token, looks_like_jwt
from albert.auth.errors import JwksUnavailable
from albert.auth.identify import Authenticator, refusal
from albert.auth.session_api import SESSION_CHECK_PATH
from albert.auth.tokens import TokenError, verify_token
from albert.router import Forward, ForwardToObject, route
from albert.web import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from albert.auth.claim import ChatObjects


async def route_request(
    request: HttpRequest, now: int, auth: Authenticator, objects: ChatObjects | None = None
) -> HttpResponse | Forward | ForwardToObject:
    """Answer the request here, or say which verified object gets it."""
    settings = auth.settings
    token = bearer_token(request)
    now_ms = auth.now_ms()
    if not looks_like_jwt(token) or not request.path.startswith("/api/"):
        if request.path == "/api/session" and request.method == "POST" and objects is not None:
            revoked = await _revoked_session(token, auth, now, objects)
            if revoked is not None:
                return revoked
        return route(request, settings, now, now_ms=now_ms)
    if request.path == "/api/session":
        if request.method != "POST":
            return route(request, settings, now)
        # Only a sign-in needs these (and the claim steps behind them): imported here.
        from albert.auth.sign_in import sign_in

        return await sign_in(request, now, auth, objects)
    try:
        identity = await auth.identify_token(token, now)
    except (TokenError, JwksUnavailable) as exc:
        return refusal(exc)
    return route(request, settings, now, identity=identity, now_ms=now_ms)


async def _revoked_session(
    token: str, auth: Authenticator, now: int, objects: ChatObjects
) -> HttpResponse | None:
    """The refusal of a renewal whose signed-in session was revoked; None otherwise.

    Anonymous sessions and invalid tokens are the router's to handle (an invalid token
    just starts a new client). A renewal keeps its session's issue time, so even a
    renewal made without this check would give a token its object refuses.
    """
    try:
        identity = verify_token(token, auth.settings.signing_keys(), now=now)
    except TokenError:
        return None
    if identity.anonymous:
        return None
    status, body = await objects.post(
        identity.object_name, SESSION_CHECK_PATH, token=token, body=b"{}"
    )
    if status != 401:
        # Anything but the refusal (an object that cannot answer now) renews as before:
        # the renewed token keeps its issue time, which the object checks on every use.
        return None
    return HttpResponse(
        status=status,
        body=body,
        headers={
            "content-type": "application/json",
            "www-authenticate": 'Bearer error="invalid_token"',
        },
    )
