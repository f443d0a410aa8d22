"""Who a request comes from: a session token of ours, or the host product's JWT.

Both the router and the client's object verify every request with this (the object
never trusts its caller). A bearer token of three parts is a host JWT
(albert.auth.host_jwt), of two parts a signed session token (albert.auth.tokens).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from albert.auth.bearer import bearer_token, looks_like_jwt
from albert.auth.errors import JwksUnavailable
from albert.auth.tokens import Identity, TokenError, verify_token
from albert.settings import Settings
from albert.web import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from albert.auth.host_jwt import HostJwtVerifier, HttpSource, SecretLookup
    from albert.auth.jwks import JwksRegistry


class Authenticator:
    """Verifies bearer tokens of either kind for one deployment's settings."""

    def __init__(
        self,
        settings: Settings,
        http: HttpSource = None,
        *,
        registry: JwksRegistry | None = None,
        clock: Callable[[], float] = time.time,
        secrets: SecretLookup | None = None,
    ) -> None:
        self.settings = settings
        self._http = http
        self._registry = registry
        self._clock = clock
        self._secrets = secrets
        self._host_jwt: HostJwtVerifier | None = None

    @property
    def host_jwt(self) -> HostJwtVerifier:
        """The host-JWT verifier, made on the first host token: most deployments and most
        requests carry session tokens only, so its modules are not imported before."""
        if self._host_jwt is None:
            # No await in between: one verifier (and one key cache policy) per Authenticator.
            from albert.auth.host_jwt import HostJwtVerifier

            self._host_jwt = HostJwtVerifier(
                self.settings,
                self._http,
                registry=self._registry,
                clock=self._clock,
                secrets=self._secrets,
            )
        return self._host_jwt

    def now_ms(self) -> int:
        """The current time in Unix milliseconds, by this authenticator's clock: a new
        session's issue time."""
        return int(self._clock() * 1000)

    async def identify(self, request: HttpRequest, now: int) -> Identity:
        """The verified identity of a request; TokenError or JwksUnavailable."""
        return await self.identify_token(bearer_token(request), now)

    async def identify_token(self, token: str, now: int) -> Identity:
        """The verified identity a bearer token proves; TokenError or JwksUnavailable."""
        if looks_like_jwt(token):
            return await self.host_jwt.verify(token, now=now)
        return verify_token(token, self.settings.signing_keys(), now=now)


def refusal(exc: TokenError | JwksUnavailable) -> HttpResponse:
    """The answer to a request whose token could not be verified: 401, or 503 without keys."""
    if isinstance(exc, JwksUnavailable):
        wait = max(1, math.ceil(exc.retry_after_seconds))
        return HttpResponse.error(
            503,
            "auth_unavailable",
            "the identity provider's signing keys could not be fetched; try again shortly",
            headers={"retry-after": str(wait)},
        )
    return HttpResponse.error(
        401,
        "unauthorized",
        exc.reason,
        headers={"www-authenticate": 'Bearer error="invalid_token"'},
    )
