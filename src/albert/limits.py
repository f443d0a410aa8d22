"""Per-client rate limits, kept in the client's object (one object, one limiter)."""

from __future__ import annotations

import math

from albert.clock import Clock


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
        return math.ceil((1 - self._tokens) / self._rate * 10) / 10
