"""The host product's signing keys (a JWKS), fetched over the outbound HTTP port and cached.

- Freshness: a key set is fresh for its response's `Cache-Control: max-age` (a default
  without one, at most a day; `no-cache`/`no-store` count as 0). Past it, the next
  lookup refetches.
- Unknown `kid`: a token naming a key the set lacks triggers a refetch (the host rotated
  its keys). Every fetch, whatever triggered it, is at most one per refresh interval and
  shared by concurrent lookups, so a flood of tokens with made-up kids costs the JWKS
  endpoint one request per interval.
- Endpoint down: a failed fetch keeps the cached set, usable for the stale period after
  its max-age (`stale-if-error` when the response gave one, capped by the setting).
  With no usable set, lookups raise JwksUnavailable (the router answers 503).
- Keys are pinned to one algorithm each by their type: RSA (2048 bits or more) to
  RS256, EC P-256 to ES256. A key that declares another `alg` verifies nothing; one
  whose `use` is not `sig`, that carries private parts, or of any other type (`oct`
  above all: a JWKS never supplies an HMAC secret) is skipped.

PyJWT and `cryptography` are imported on the first fetch only: most requests never
carry a host token, and cold start counts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from albert.auth.errors import JwksUnavailable

log = logging.getLogger(__name__)

MAX_JWKS_BYTES = 256_000
MAX_KEYS = 50
MAX_AGE_CAP_SECONDS = 86_400
MIN_RSA_BITS = 2048


class JwksPolicy(BaseModel):
    """How long key sets are kept and how often the endpoint may be asked."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    default_max_age_seconds: int = Field(300, ge=0)
    min_refresh_seconds: float = Field(30.0, ge=0)
    max_stale_seconds: int = Field(86_400, ge=0)
    timeout_seconds: float = Field(5.0, gt=0)


@dataclass(frozen=True)
class VerificationKey:
    """One key of the set, with the only algorithm it verifies.

    A key that declares an algorithm host tokens may not use (RS512, HS256 …) is kept
    without `key`, so a token naming it is told the algorithm is not allowed for it.
    """

    kid: str | None
    algorithm: str
    key: Any = None  # a cryptography public key object; None: verifies nothing

    def verifies(self, algorithm: str) -> bool:
        """True when this key may check a token signed with `algorithm`."""
        return self.key is not None and self.algorithm == algorithm


@dataclass(frozen=True)
class KeySet:
    """A fetched set and how long it may be used."""

    keys: tuple[VerificationKey, ...]
    fetched_at: float
    fresh_until: float
    usable_until: float


class _FetchFailed(Exception):
    """Why a fetch gave no key set (a short reason, safe to log)."""


def parse_cache_control(value: str) -> tuple[int | None, int | None]:
    """(max-age, stale-if-error) in seconds from a Cache-Control header; None where absent.

    `no-cache` and `no-store` mean a max-age of 0.
    """
    max_age: int | None = None
    stale_if_error: int | None = None
    for part in value.split(","):
        name, _, raw = part.strip().partition("=")
        name = name.strip().lower()
        raw = raw.strip().strip('"')
        if name in ("no-cache", "no-store"):
            max_age = 0
        elif name in ("max-age", "stale-if-error") and raw.isdigit():
            seconds = min(int(raw), 10 * MAX_AGE_CAP_SECONDS)
            if name == "max-age":
                max_age = seconds if max_age is None else min(max_age, seconds)
            else:
                stale_if_error = seconds
    return max_age, stale_if_error


def _a_public_signing_key(jwk: dict[str, Any]) -> bool:
    """True for a JWK meant for verifying signatures that carries no private part."""
    kid = jwk.get("kid")
    if kid is not None and (not isinstance(kid, str) or not 0 < len(kid) <= 256):
        return False
    if jwk.get("use") not in (None, "sig"):
        return False
    ops = jwk.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        return False
    return not any(private in jwk for private in ("d", "p", "q", "dp", "dq", "qi", "k"))


def parse_jwk(jwk: Any) -> VerificationKey | None:
    """The verification key of one JWK, or None when it may not verify host tokens."""
    if not isinstance(jwk, dict) or not _a_public_signing_key(jwk):
        return None
    kid = jwk.get("kid")
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    kty, alg = jwk.get("kty"), jwk.get("alg")
    if isinstance(alg, str) and alg not in ("RS256", "ES256"):
        return VerificationKey(kid=kid, algorithm=alg[:16])
    try:
        if kty == "RSA" and alg in (None, "RS256"):
            key = RSAAlgorithm.from_jwk(jwk)
            if key.key_size < MIN_RSA_BITS:
                return None
            return VerificationKey(kid=kid, algorithm="RS256", key=key)
        if kty == "EC" and jwk.get("crv") == "P-256" and alg in (None, "ES256"):
            return VerificationKey(kid=kid, algorithm="ES256", key=ECAlgorithm.from_jwk(jwk))
    except Exception:
        # A malformed key is skipped; the rest of the set still counts.
        return None
    return None


def parse_jwks(body: bytes) -> tuple[VerificationKey, ...]:
    """The usable keys of a JWKS document; _FetchFailed when it is no JWKS at all."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise _FetchFailed("the response is not JSON") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise _FetchFailed("the response has no `keys` list")
    parsed = [parse_jwk(k) for k in keys[:MAX_KEYS]]
    return tuple(k for k in parsed if k is not None)


class JwksCache:
    """The key set of one JWKS URL."""

    def __init__(
        self, url: str, policy: JwksPolicy, clock: Callable[[], float] = time.time
    ) -> None:
        self.url = url
        self._policy = policy
        self._clock = clock
        self._set: KeySet | None = None
        self._last_attempt: float | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0  # how many requests went to the endpoint (for tests and logs)

    async def lookup(
        self, kid: str | None, http: httpx.AsyncClient | None
    ) -> list[VerificationKey]:
        """The keys a token naming `kid` may be signed with (every key when it names none).

        Refetches a set past its max-age, and once more for an unknown kid (both within
        the refresh interval). An empty list means the kid is unknown; JwksUnavailable
        means there is no set to look in.
        """
        if self._set is None or self._clock() >= self._set.fresh_until:
            await self._refresh(http)
        found = self._matching(kid)
        if not found and kid is not None and self._usable():
            await self._refresh(http)
            found = self._matching(kid)
        if not self._usable():
            raise JwksUnavailable(self._retry_after())
        return found

    def _usable(self) -> bool:
        return self._set is not None and self._clock() < self._set.usable_until

    def _matching(self, kid: str | None) -> list[VerificationKey]:
        if not self._usable():
            return []
        assert self._set is not None
        return [k for k in self._set.keys if kid is None or k.kid == kid]

    def _retry_after(self) -> float:
        if self._last_attempt is None:
            return 1.0
        wait = self._last_attempt + self._policy.min_refresh_seconds - self._clock()
        return max(1.0, wait)

    def _may_fetch(self) -> bool:
        last = self._last_attempt
        return last is None or self._clock() - last >= self._policy.min_refresh_seconds

    async def _refresh(self, http: httpx.AsyncClient | None) -> None:
        """Fetch the set, unless one was fetched (or tried) within the refresh interval."""
        if not self._may_fetch():
            return
        async with self._lock:
            # Whoever waited on the lock finds the fetch it waited for already made.
            if not self._may_fetch():
                return
            self._last_attempt = self._clock()
            try:
                self._set = await self._fetch(http)
            except _FetchFailed as exc:
                kept = "keeping the cached keys" if self._usable() else "no usable keys"
                log.warning("JWKS fetch from %s failed: %s; %s", self.url, exc, kept)

    async def _fetch(self, http: httpx.AsyncClient | None) -> KeySet:
        if http is None:
            raise _FetchFailed("no outbound HTTP client")
        self.fetches += 1
        policy = self._policy
        try:
            async with asyncio.timeout(policy.timeout_seconds):
                async with http.stream(
                    "GET",
                    self.url,
                    headers={"accept": "application/json"},
                    timeout=policy.timeout_seconds,
                    follow_redirects=False,
                ) as response:
                    if response.status_code != 200:
                        raise _FetchFailed(f"HTTP {response.status_code}")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_JWKS_BYTES:
                            raise _FetchFailed(f"the response is over {MAX_JWKS_BYTES} bytes")
                    cache_control = response.headers.get("cache-control", "")
        except TimeoutError:
            raise _FetchFailed(f"no answer within {policy.timeout_seconds:g} s") from None
        except httpx.HTTPError as exc:
            raise _FetchFailed(type(exc).__name__) from None
        keys = parse_jwks(bytes(body))
        now = self._clock()
        max_age, stale_if_error = parse_cache_control(cache_control)
        if max_age is None:
            max_age = policy.default_max_age_seconds
        fresh_until = now + min(max_age, MAX_AGE_CAP_SECONDS)
        stale = policy.max_stale_seconds
        if stale_if_error is not None:
            stale = min(stale, stale_if_error)
        log.info("JWKS from %s: %d usable key(s), fresh for %d s", self.url, len(keys), max_age)
        return KeySet(
            keys=keys, fetched_at=now, fresh_until=fresh_until, usable_until=fresh_until + stale
        )


class JwksRegistry:
    """One cache per JWKS URL, shared by every verifier of the process (or isolate)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._caches: dict[str, JwksCache] = {}

    def cache_for(self, url: str, policy: JwksPolicy) -> JwksCache:
        """The cache of `url` (made on first use with this policy)."""
        cache = self._caches.get(url)
        if cache is None:
            cache = self._caches[url] = JwksCache(url, policy, self._clock)
        return cache


# The router and every object of an isolate share these caches.
PROCESS_REGISTRY = JwksRegistry()
