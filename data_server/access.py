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
import ipaddress
import json
import math
import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._app = app
        self._guarded = guarded
        self._key = api_key.encode()
        self._per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

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
            wait = self._take(_address(scope))
            if wait > 0:
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

    def _take(self, address: str) -> float:
        """Spend one request of the address's bucket; the seconds to wait when it is empty."""
        now = self._clock()
        capacity = float(self._per_minute)
        rate = capacity / 60.0
        # Taken out and put back: the dict's order is the order of use, oldest first.
        tokens, seen = self._buckets.pop(address, (capacity, now))
        tokens = min(capacity, tokens + (now - seen) * rate)
        while len(self._buckets) >= MAX_ADDRESSES:
            del self._buckets[next(iter(self._buckets))]
        if tokens < 1:
            self._buckets[address] = (tokens, now)
            return (1 - tokens) / rate
        self._buckets[address] = (tokens - 1, now)
        return 0.0


def _address(scope: Scope) -> str:
    """The bucket of the socket's address: IPv4 as it is, IPv6 by its /64 (the block one
    subscriber usually holds)."""
    client = scope.get("client")
    if not client:
        return "?"
    try:
        ip = ipaddress.ip_address(str(client[0]))
    except ValueError:
        return str(client[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


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
