"""Who may start a new client: new sessions per address, checked in the router.

Each new client gets fresh per-client budgets (chat messages, MCP changes), so
unbounded session creation would mean unbounded model cost. New sessions are
counted per client address (`CF-Connecting-IP`, which the platform sets and a
client cannot; IPv6 per /64, the block one subscriber usually holds) in the
shared limiter. Renewing a valid token is not a new client and is not counted, and
neither is a sign-in with the host's JWT (a forged one is refused by the router).
"""

from __future__ import annotations

import logging
import math

from albert.auth.bearer import authenticate, bearer_token
from albert.auth.tokens import TokenError
from albert.limits.addresses import address_bucket
from albert.limits.shared import SharedLimiter
from albert.settings import Settings
from albert.web import HttpRequest, HttpResponse

log = logging.getLogger(__name__)


def address_key(request: HttpRequest) -> str:
    """The limiter key of the request's client address."""
    address = address_bucket(request.headers.get("cf-connecting-ip", "").strip())
    return f"session-ip:{address or 'unknown'}"


async def admit_new_session(
    request: HttpRequest, settings: Settings, now: int, limiter: SharedLimiter
) -> HttpResponse | None:
    """A 429 when this address started too many clients lately; None to go on."""
    allowed = settings.session_limit()
    if allowed is None or request.path != "/api/session" or request.method != "POST":
        return None
    token = bearer_token(request)
    if token.count(".") == 2:
        # A host JWT: a sign-in, verified by the router, never an anonymous new client.
        return None
    if token:
        try:
            authenticate(request, settings, now)
            return None  # a renewal keeps its client
        except TokenError:
            pass
    try:
        wait = await limiter.take(
            address_key(request), allowed, settings.new_sessions_window_seconds
        )
    except Exception:
        # The limiter is a guard, not a dependency: when it fails, sessions still work.
        log.exception("session limiter failed; admitting the session")
        return None
    if wait is None:
        return None
    return HttpResponse.error(
        429,
        "rate_limited",
        f"too many new sessions from this address; try again in {math.ceil(wait)} s",
        headers={"retry-after": str(math.ceil(wait))},
    )
