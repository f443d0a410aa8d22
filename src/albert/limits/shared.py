"""Limits shared by every object and request: the port, its wire, the one-process stand-in.

New sessions per address and model calls per tenant are counted where every worker
instance sees the same count: on Cloudflare one limiter Durable Object per key
(albert.cloudflare.shared_limiter), elsewhere InMemoryLimiter in the process.
"""

from collections import OrderedDict
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from albert.clock import Clock
from albert.limits.token_bucket import TokenBucket


class TakeRequest(BaseModel):
    """What a limiter is asked: one action under this limit."""

    model_config = ConfigDict(defer_build=True)

    allowed: int = Field(ge=1, le=10_000_000)
    window_seconds: float = Field(gt=0, le=30 * 86_400)


class TakeResult(BaseModel):
    """The limiter's answer: None, or how long to wait."""

    model_config = ConfigDict(defer_build=True)

    wait_seconds: float | None = None


class SharedLimiter(Protocol):
    """Counts actions per key where every worker instance sees the same count."""

    async def take(self, key: str, allowed: int, window_seconds: float) -> float | None:
        """Spend one action of `key`; None when allowed, else the seconds to wait."""
        ...


class InMemoryLimiter:
    """SharedLimiter for one process (the local runtime without a limiter binding, tests).

    At most `max_keys` buckets are kept (least recently used dropped), so a flood of
    new keys costs bounded memory; a dropped bucket starts full again.
    """

    def __init__(self, clock: Clock, max_keys: int = 50_000) -> None:
        self._clock = clock
        self._max = max_keys
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    async def take(self, key: str, allowed: int, window_seconds: float) -> float | None:
        """Spend one action of `key` in this process's bucket for it."""
        now = self._clock.now_ms()
        bucket = self._buckets.pop(key, None) or TokenBucket.full(allowed, now)
        wait = bucket.take(allowed, window_seconds, now)
        self._buckets[key] = bucket
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)
        return wait
