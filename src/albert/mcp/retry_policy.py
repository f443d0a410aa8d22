"""The reconnection policy: a bounded exponential schedule, then half-open.

A dropped or unreachable server is retried `attempts` times, waiting base,
2·base, 4·base … (capped at `max_delay`) between tries: 1, 2, 4, 8, 16 s by
default. When every retry failed the server is `failed`; after a cool-down
one more attempt is made (half-open: by the next user message, or by the alarm
while a socket is open), which either brings it back or starts the cool-down again.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from albert.settings import Settings


class ReconnectPolicy(BaseModel):
    """Retry schedule and half-open cool-down."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    base_seconds: float = Field(1.0, gt=0)
    max_seconds: float = Field(16.0, gt=0)
    attempts: int = Field(5, ge=0)
    cooldown_seconds: float = Field(60.0, ge=0)

    @classmethod
    def from_settings(cls, settings: Settings) -> ReconnectPolicy:
        """The policy configured for this deployment."""
        return cls(
            base_seconds=settings.mcp_retry_base_seconds,
            max_seconds=settings.mcp_retry_max_seconds,
            attempts=settings.mcp_retry_attempts,
            cooldown_seconds=settings.mcp_half_open_cooldown_seconds,
        )

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if attempt < 1:
            raise ValueError("attempts are numbered from 1")
        return min(self.base_seconds * 2 ** (attempt - 1), self.max_seconds)

    def schedule(self) -> list[float]:
        """Every delay of one recovery cycle, in order."""
        return [self.delay(n) for n in range(1, self.attempts + 1)]


class RetryState(BaseModel):
    """Where one server is in its recovery cycle (times are Unix seconds)."""

    model_config = ConfigDict(defer_build=True)

    attempts: int = 0
    next_at: float | None = None
    failed_at: float | None = None
    half_open_at: float | None = None  # when the cool-down after `failed_at` ends
    final: bool = False  # failed for a reason no retry can fix: no half-open attempt
    authorize: bool = False  # final because the server waits for the user's authorization

    def begin(self, policy: ReconnectPolicy, now: float) -> None:
        """Start a recovery cycle: the first retry after the first delay."""
        self.attempts = 0
        self.failed_at = None
        self.half_open_at = None
        self.final = False
        self.authorize = False
        self._plan(policy, now)

    def record_failure(self, policy: ReconnectPolicy, now: float) -> None:
        """A retry failed: plan the next one, or give up until the cool-down ends."""
        self.attempts += 1
        self._plan(policy, now)

    def _plan(self, policy: ReconnectPolicy, now: float) -> None:
        if self.attempts >= policy.attempts:
            self.next_at = None
            self.give_up(policy, now)
        else:
            self.next_at = now + policy.delay(self.attempts + 1)

    def give_up(self, policy: ReconnectPolicy, now: float) -> None:
        """Retries spent (or the half-open try failed): the cool-down starts now."""
        self.failed_at = now
        self.half_open_at = now + policy.cooldown_seconds

    def stop(self, now: float, *, authorize: bool = False) -> None:
        """Failed for good (until the config changes, or the user authorizes): no retry,
        no half-open attempt."""
        self.next_at = None
        self.failed_at = now
        self.half_open_at = None
        self.final = True
        self.authorize = authorize

    def reset(self) -> None:
        """Connected again."""
        self.attempts = 0
        self.next_at = None
        self.failed_at = None
        self.half_open_at = None
        self.final = False
        self.authorize = False

    @property
    def exhausted(self) -> bool:
        """Every retry of the cycle failed."""
        return self.failed_at is not None

    def due(self, now: float) -> bool:
        """A scheduled retry is due."""
        return self.next_at is not None and self.next_at <= now

    def half_open_ready(self, policy: ReconnectPolicy, now: float) -> bool:
        """Exhausted, and the cool-down has passed: one more attempt may be made."""
        return (
            not self.final
            and self.failed_at is not None
            and now - self.failed_at >= policy.cooldown_seconds
        )
