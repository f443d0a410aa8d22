"""The shared limiter on Cloudflare: one limiter Durable Object per key.

Why a Durable Object and not the Workers rate-limiting binding: the binding counts
per Cloudflare location and only over 10 or 60 seconds, so a client spread over
locations gets the limit once per location, and neither a ten-minute session
window nor an hourly model budget can be said at all. One object per key counts
every request for the key in one place, exactly, over any window, and keeps the
count in its storage. The cost is one object round trip per new session and per
model call (a model call takes seconds; the round trip milliseconds). One key's
object serves on the order of a thousand requests a second, which a single
tenant's model calls stay far below.

The local runtime hosts the same object class (wrangler.toml's LIMITER binding),
so the code path tested locally is the deployed one. Without the binding (other
hosts, unit tests) a per-process InMemoryLimiter stands in.
"""

from __future__ import annotations

from typing import Any

from albert.clock import SystemClock
from albert.cloudflare.http import post_to_object
from albert.limits.shared import InMemoryLimiter, SharedLimiter, TakeRequest, TakeResult

_LIMITER_URL = "https://limiter.internal/take"
_PROCESS_LIMITER = InMemoryLimiter(SystemClock())


class DurableObjectLimiter:
    """SharedLimiter over the LIMITER namespace: the key names the object."""

    def __init__(self, namespace: Any) -> None:
        self._namespace = namespace

    async def take(self, key: str, allowed: int, window_seconds: float) -> float | None:
        stub = self._namespace.get(self._namespace.idFromName(key))
        body = TakeRequest(allowed=allowed, window_seconds=window_seconds).model_dump_json()
        status, text = await post_to_object(
            stub, _LIMITER_URL, body, {"content-type": "application/json"}
        )
        if status != 200:
            raise RuntimeError(f"limiter object answered {status}")
        return TakeResult.model_validate_json(text).wait_seconds


def shared_limiter(env: Any) -> SharedLimiter:
    """The deployment's shared limiter: the LIMITER objects, else this process's buckets."""
    namespace = getattr(env, "LIMITER", None)
    if namespace is None:
        return _PROCESS_LIMITER
    return DurableObjectLimiter(namespace)
