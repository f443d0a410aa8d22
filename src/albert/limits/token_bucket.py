"""The token bucket's arithmetic, on wall-clock milliseconds: a stored bucket (the limiter
object's, albert.limits.key_bucket) refills for the time it was not touched, restarts
included."""

import math

from pydantic import BaseModel, ConfigDict


def round_up(seconds: float) -> float:
    """A wait as it is told to a client: rounded up to the tenth of a second."""
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
        return round_up((1 - self.tokens) / rate / 1000)
