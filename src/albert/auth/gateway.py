"""The router with both kinds of bearer token: host JWTs here, session tokens in the router.

A request carrying a host JWT is verified here (asynchronously: the keys may have to be
fetched) before the router (albert.router) decides, with the verified identity, where it
goes; `POST /api/session` with a JWT is a sign-in (albert.auth.sign_in). Every other
request goes to the router as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert.auth.bearer import bearer_token, looks_like_jwt
from albert.auth.errors import JwksUnavailable
from albert.auth.identify import Authenticator, refusal
from albert.auth.tokens import TokenError
from albert.router import Forward, route
from albert.web import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from albert.auth.claim import ChatObjects


async def route_request(
    request: HttpRequest, now: int, auth: Authenticator, objects: ChatObjects | None = None
) -> HttpResponse | Forward:
    """Answer the request here, or say which verified object gets it."""
    settings = auth.settings
    token = bearer_token(request)
    if not looks_like_jwt(token) or not request.path.startswith("/api/"):
        return route(request, settings, now)
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
    return route(request, settings, now, identity=identity)
