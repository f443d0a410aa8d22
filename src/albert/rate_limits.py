"""Rate limits: per client in its object, and shared ones kept in a limiter per key.

- RateLimiter: a token bucket in memory, for limits of one client's object (one
  object, one limiter): chat messages, MCP changes, frames.
- SharedLimiter: the port for limits across objects and requests (new sessions per
  address, model calls per tenant). Its buckets live where every worker instance
  sees the same count: on Cloudflare one limiter Durable Object per key
  (albert.cloudflare.shared_limiter), elsewhere InMemoryLimiter in the process.
- TokenBucket: the bucket arithmetic both use, on wall-clock milliseconds so a
  persisted bucket refills across restarts.
"""

import ipaddress
import math
from collections import OrderedDict
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from albert.clock import Clock


def address_bucket(raw: str) -> str | None:
    """The address a per-address limit counts: IPv4 as it is (an IPv4-mapped IPv6 too), IPv6
    by its /64, the block one subscriber usually holds; None when `raw` is no address."""
    try:
        ip = ipaddress.ip_address(raw)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class RateLimiter:
    """A token bucket: `allowed` actions per window, refilled evenly, bursts up to `allowed`."""

    def __init__(self, allowed: int, clock: Clock, window_seconds: float = 60.0) -> None:
        self._capacity = float(allowed)
        self._rate = allowed / window_seconds
        self._tokens = self._capacity
        self._clock = clock
        self._last = clock.monotonic()

    def take(self) -> float | None:
        """Spend one token; None when allowed, else the seconds until one is free."""
        now = self._clock.monotonic()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return None
        return _round_up((1 - self._tokens) / self._rate)


def _round_up(seconds: float) -> float:
    return math.ceil(seconds * 10) / 10


class TokenBucket(BaseModel):
    """A bucket's state: tokens left when last touched."""

    model_config = ConfigDict(defer_build=True)

    tokens: float
    updated_ms: int

    @classmethod
    def full(cls, allowed: int, now_ms: int) -> "TokenBucket":
        return cls(tokens=float(allowed), updated_ms=now_ms)

    def take(self, allowed: int, window_seconds: float, now_ms: int) -> float | None:
        """Refill for the time passed, then spend one token; None or seconds to wait."""
        rate = allowed / window_seconds / 1000  # tokens per millisecond
        elapsed = max(0, now_ms - self.updated_ms)
        self.tokens = min(float(allowed), self.tokens + elapsed * rate)
        self.updated_ms = max(self.updated_ms, now_ms)
        if self.tokens >= 1:
            self.tokens -= 1
            return None
        return _round_up((1 - self.tokens) / rate / 1000)


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
        now = self._clock.now_ms()
        bucket = self._buckets.pop(key, None) or TokenBucket.full(allowed, now)
        wait = bucket.take(allowed, window_seconds, now)
        self._buckets[key] = bucket
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)
        return wait
