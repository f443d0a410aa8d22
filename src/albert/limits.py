"""Per-client rate limits, kept in the client's object (one object, one limiter)."""

from __future__ import annotations

import math

from albert.clock import Clock


class RateLimiter:
    """A token bucket: `per_minute` actions, refilled evenly, bursts up to the same number."""

    def __init__(self, per_minute: int, clock: Clock) -> None:
        self._capacity = float(per_minute)
        self._rate = per_minute / 60.0
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
        return math.ceil((1 - self._tokens) / self._rate * 10) / 10
