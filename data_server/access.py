"""Who may use the data server's MCP endpoint and platform services, and how often.

Both are off unless configured (the local stack leaves them off):

- `DATA_SERVER_API_KEY`: every request to the MCP path and to `/platform` must carry
  `Authorization: Bearer <key>` (compared in constant time); the worker sends it from the
  same secret. `/healthz` and `/readyz` stay open for probes.
- `DATA_SERVER_REQUESTS_PER_MINUTE`: requests per client address (the socket's: forwarded
  headers are not trusted; IPv6 per /64, as the worker counts) to those paths; over it, 429
  with `Retry-After`. At most MAX_ADDRESSES buckets are kept, the least recently used
  dropped first.
"""

from __future__ import annotations

import hmac
import json
import math
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from albert.clock import Clock, SystemClock
from albert.limits.addresses import address_bucket
from albert.limits.shared import InMemoryLimiter

# The buckets kept, a bound on memory: past it the least recently used one is dropped (its
# address starts again with a full bucket; a bucket idle for a minute is full anyway).
MAX_ADDRESSES = 100_000


class AccessGuard:
    """ASGI middleware: the API key and the per-address rate limit on the guarded paths."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        guarded: tuple[str, ...],
        api_key: str = "",
        per_minute: int = 0,
        clock: Clock | None = None,
    ) -> None:
        self._app = app
        self._guarded = guarded
        self._key = api_key.encode()
        self._per_minute = per_minute
        # The worker's own per-key token buckets, least recently used dropped past the bound.
        self._buckets = InMemoryLimiter(clock or SystemClock(), max_keys=MAX_ADDRESSES)

    def _is_guarded(self, path: str) -> bool:
        return any(path == p or path.startswith(p.rstrip("/") + "/") for p in self._guarded)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._is_guarded(scope.get("path", "")):
            await self._app(scope, receive, send)
            return
        if self._key and not self._authorized(scope):
            await _json(send, 401, {"error": "unauthorized"}, [(b"www-authenticate", b"Bearer")])
            return
        if self._per_minute:
            wait = await self._buckets.take(_address(scope), self._per_minute, 60.0)
            if wait is not None:
                retry = str(max(1, math.ceil(wait))).encode()
                await _json(send, 429, {"error": "rate_limited"}, [(b"retry-after", retry)])
                return
        await self._app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, token = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self._key)
        return False


def _address(scope: Scope) -> str:
    """The bucket of the socket's address, counted as the worker counts addresses
    (albert.limits.addresses.address_bucket: IPv6 by its /64)."""
    client = scope.get("client")
    if not client:
        return "?"
    return address_bucket(str(client[0])) or str(client[0])


async def _json(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": payload})
