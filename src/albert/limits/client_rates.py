"""A client's own rates, kept in memory by its object: chat messages, MCP changes, frames.

One object serves one client, so its limits need no sharing: a bucket per limit, on the
monotonic clock (nothing is stored; a woken object starts with full buckets).
"""

from albert.clock import Clock
from albert.limits.token_bucket import round_up


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
        return round_up((1 - self._tokens) / self._rate)
