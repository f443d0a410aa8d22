"""Sign-in with the host product's JWT: verify it and say which user of which tenant it is.

A host token names its tenant by `iss` and `aud`: each tenant that accepts host tokens
has its own `jwt_issuer` and `jwt_audience` (no two share the pair), and the token is
then verified against exactly that tenant's settings:

- the algorithm comes from the header but must be one the key allows: HS256 only for a
  tenant that names its own secret (`jwt_hs256_secret`, a deployment secret of at least
  32 bytes, which no other tenant may name), RS256 and ES256 only with a key of the
  tenant's JWKS (its `jwks_url`, else AUTH_JWKS_URL) of that type and `kid`. `none`, any
  other algorithm, and any algorithm the configured keys do not have are refused, so
  neither an unsigned token, nor an RSA public key used as an HMAC secret, nor one
  tenant's HS256 secret used for another tenant's `iss`/`aud` can get in;
- the signature, then `iss` and `aud` exactly, then `exp` (required) and `nbf`/`iat`
  (when present) against the clock with AUTH_JWT_LEEWAY_SECONDS of leeway;
- `sub` is the user id; it becomes part of the user's Durable Object name, so it must
  match USER_ID_PATTERN.

Refusals are TokenError with a short reason for the 401 body; no key set to check
against is JwksUnavailable (503). Neither the token nor any of its claims is logged.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable
from typing import Any

import httpx

from albert.auth.jwks import PROCESS_REGISTRY, JwksPolicy, JwksRegistry, VerificationKey
from albert.auth.tenants import Tenant
from albert.auth.tokens import USER_ID_PATTERN, Identity, TokenError
from albert.settings import Settings

log = logging.getLogger(__name__)

MAX_JWT_CHARS = 8_192
ALLOWED_ALGORITHMS = ("HS256", "RS256", "ES256")
MIN_SECRET_BYTES = 32
# Three base64url parts; the signature may be empty (an `alg: none` token), which is
# refused for its algorithm rather than for its shape, so the client learns why.
_JWT_SHAPE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_USER_ID = re.compile(USER_ID_PATTERN)
# A time claim beyond this (year 2255 in seconds) is no time a token means: refused, so no
# later integer conversion or SQLite column overflows on it.
MAX_TIME_CLAIM = 2**33

# The outbound HTTP client, or a function making it on first use (most requests never
# carry a host token, so the router need not build a client for them).
HttpSource = httpx.AsyncClient | Callable[[], httpx.AsyncClient] | None
# A deployment secret by name (the env binding on Cloudflare), None when it is not set.
SecretLookup = Callable[[str], str | None]


def settings_secrets(settings: Settings) -> SecretLookup:
    """The secrets Settings itself holds: AUTH_JWT_SECRET only (a deployment passes the
    env's own lookup, which knows every AUTH_JWT_SECRET_<NAME> too)."""

    def lookup(name: str) -> str | None:
        if name != "AUTH_JWT_SECRET":
            return None
        return settings.auth_jwt_secret.get_secret_value() or None

    return lookup


class HostJwtVerifier:
    """Verifies host tokens for every tenant that accepts them."""

    def __init__(
        self,
        settings: Settings,
        http: HttpSource,
        *,
        registry: JwksRegistry | None = None,
        clock: Callable[[], float] = time.time,
        secrets: SecretLookup | None = None,
    ) -> None:
        self._settings = settings
        self._http = http
        self._secrets = secrets or settings_secrets(settings)
        self._registry = registry or PROCESS_REGISTRY
        self._clock = clock
        self._policy = JwksPolicy(
            default_max_age_seconds=settings.auth_jwks_default_max_age_seconds,
            min_refresh_seconds=settings.auth_jwks_min_refresh_seconds,
            max_stale_seconds=settings.auth_jwks_max_stale_seconds,
            timeout_seconds=settings.auth_jwks_timeout_seconds,
        )

    async def verify(self, token: str, *, now: int | None = None) -> Identity:
        """The signed-in user a host token proves, or TokenError / JwksUnavailable."""
        at = int(self._clock()) if now is None else now
        tenant_key = "?"
        try:
            header, claims = _unverified(token)
            algorithm = header.get("alg")
            if algorithm not in ALLOWED_ALGORITHMS:
                raise TokenError("algorithm not allowed")
            tenant_key, tenant = self._tenant_for(claims)
            keys = await self._keys(tenant, algorithm, header.get("kid"))
            verified = _check_signature(token, keys, algorithm, tenant)
            return self._identity(verified, tenant_key, at)
        except TokenError as exc:
            # The reason only: token, claims and key ids stay out of logs.
            log.info("host token refused for tenant %s: %s", tenant_key, exc.reason)
            raise

    def _tenant_for(self, claims: dict[str, Any]) -> tuple[str, Tenant]:
        issuer, audience = claims.get("iss"), claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        accepting = [(k, t) for k, t in self._settings.tenants().items() if t.accepts_host_tokens]
        if not accepting:
            raise TokenError("this deployment does not accept host tokens")
        same_issuer = [(k, t) for k, t in accepting if t.jwt_issuer == issuer]
        if not same_issuer:
            raise TokenError("wrong issuer")
        for key, tenant in same_issuer:
            if tenant.jwt_audience in audiences:
                return key, tenant
        raise TokenError("wrong audience")

    async def _keys(self, tenant: Tenant, algorithm: str, kid: Any) -> list[Any]:
        """The keys the token may be checked with: each verifies `algorithm` only."""
        if algorithm == "HS256":
            name = tenant.jwt_hs256_secret
            if name is None:
                raise TokenError("algorithm not allowed for this tenant")
            secret = (self._secrets(name) or "").encode()
            if len(secret) < MIN_SECRET_BYTES:
                log.error("%s is unset or shorter than %d bytes: HS256 is off", name, 32)
                raise TokenError("algorithm not allowed for this tenant")
            return [secret]
        url = (tenant.jwks_url or self._settings.auth_jwks_url).strip()
        if not url or (self._settings.mode == "production" and not url.startswith("https://")):
            raise TokenError("algorithm not allowed for this tenant")
        if kid is not None and not isinstance(kid, str):
            raise TokenError("malformed token")
        cache = self._registry.cache_for(url, self._policy)
        http = self._http() if callable(self._http) else self._http
        found: list[VerificationKey] = await cache.lookup(kid, http)
        if not found:
            raise TokenError("unknown key id")
        usable = [k.key for k in found if k.verifies(algorithm)]
        if not usable:
            raise TokenError("algorithm not allowed for this key")
        return usable

    def _identity(self, claims: dict[str, Any], tenant_key: str, now: int) -> Identity:
        leeway = self._settings.auth_jwt_leeway_seconds
        exp = _number(claims, "exp", required=True)
        assert exp is not None
        if now >= exp + leeway:
            raise TokenError("token expired")
        for name in ("nbf", "iat"):
            at = _number(claims, name, required=False)
            if at is not None and at > now + leeway:
                raise TokenError("token not yet valid")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not _USER_ID.fullmatch(subject):
            raise TokenError("invalid subject: 1-200 printable ASCII characters, no / or spaces")
        issued = _number(claims, "iat", required=False)
        return Identity(
            client_id="",
            tenant=tenant_key,
            expires_at=int(exp),
            user_id=subject,
            host_token=True,
            host_issued_at_ms=None if issued is None else int(issued * 1000),
        )


def _unverified(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and claims before any check (only to pick the tenant and the key)."""
    if len(token) > MAX_JWT_CHARS or not _JWT_SHAPE.fullmatch(token):
        raise TokenError("malformed token")
    import jwt

    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except (jwt.PyJWTError, ValueError, RecursionError):
        raise TokenError("malformed token") from None
    if "crit" in header:
        raise TokenError("unsupported token header: crit")
    return header, claims


def _check_signature(token: str, keys: list[Any], algorithm: str, tenant: Tenant) -> dict[str, Any]:
    """The claims once the signature, `iss`, `aud` and the required claims check out.

    Times are checked by the caller against its own clock.
    """
    import jwt

    options: Any = {
        "require": ["exp", "iss", "aud", "sub"],
        "verify_exp": False,
        "verify_nbf": False,
        "verify_iat": False,
    }
    for key in keys:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=tenant.jwt_audience,
                issuer=tenant.jwt_issuer,
                options=options,
            )
        except jwt.InvalidSignatureError:
            continue  # another key of the same kid may match
        except jwt.MissingRequiredClaimError as exc:
            raise TokenError(f"missing claim: {exc.claim}") from None
        except jwt.InvalidAudienceError:
            raise TokenError("wrong audience") from None
        except jwt.InvalidIssuerError:
            raise TokenError("wrong issuer") from None
        except jwt.InvalidAlgorithmError:
            raise TokenError("algorithm not allowed for this key") from None
        except (jwt.PyJWTError, ValueError, TypeError):
            raise TokenError("malformed token") from None
    raise TokenError("bad signature")


def _number(claims: dict[str, Any], name: str, *, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise TokenError(f"missing claim: {name}")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenError(f"malformed claim: {name}")
    # The JSON decoder takes NaN and Infinity: compared, they pass every check, and
    # made an integer they raise (a 500).
    if not math.isfinite(value) or abs(value) > MAX_TIME_CLAIM:
        raise TokenError(f"malformed claim: {name}")
    return float(value)
