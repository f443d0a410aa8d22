"""The recovery policy of an MCP server: the backoff, the state table, and the cycle's
persisted form. Pure policy: nothing here connects, waits or sets an alarm.

Recovery is what brings a server back once it is not up: a cycle of retries, then half-open
tries after a cool-down. Read top to bottom:

1. **Backoff** (`RecoveryPolicy`, `RecoveryCycle`). A dropped or unreachable server is
   retried `attempts` times with full jitter: retry n waits a random time between 0 and
   min(max_seconds, base·2^(n-1)), ceilings of 1, 2, 4, 8, 16 s by default (Cloudflare's
   Agents SDK jitters its retries too). Without the jitter every object that lost the
   same server at the same moment (a restart of either side) retried it in lockstep,
   five times, and all gave up together. When every retry failed the server is
   `failed`; after a cool-down one more attempt is made (half-open: by the next user
   message, or by the alarm while a socket is open), which brings it back or starts the
   cool-down again. The cool-down is not jittered: it counts from a failure time the
   jittered retries spread already. A failure no retry can fix (`Remedy`: no MCP
   endpoint, answers over the caps, the server asking for the user's authorization) stops
   the cycle at once: no retry, no half-open try.
2. **States** (`TRANSITIONS`): the moves a server's state may make; the events are
   `albert.mcp.server.McpServer`'s, the only code that assigns a state.

   | event              | from                                    | to                       |
   | ------------------ | --------------------------------------- | ------------------------ |
   | `connected`        | connecting, reconnecting, failed, ready | ready                    |
   | `lost`             | ready, connecting                       | reconnecting             |
   | `recovery_planned` | connecting, reconnecting, failed        | reconnecting, failed, or |
   |                    |                                         | needs_authorization      |
   | `retry_failed`     | reconnecting                            | (as `recovery_planned`)  |
   | `half_open_failed` | failed                                  | failed (cool-down anew)  |
   | `disabled`         | any                                     | disabled                 |

   `failed` means every retry of the cycle was spent; `needs_authorization` that the
   server asked for OAuth and only the user can go on (albert.mcp.oauth_flow).
3. **The persisted cycle** (`RecoveryLog`): the attempt count, the next retry time, the
   time the cycle was spent and what can end a failure no retry fixes, in
   `mcp_retry_state`, so an evicted or restarted object carries on where it was instead
   of hammering a dead server with a fresh cycle. A row remembers the URL it was written
   for (a replaced config starts afresh).

The scheduler that runs cycles on the object's alarm is `albert.mcp.recovery_scheduler`.
Times are Unix seconds from the Clock port.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from albert.mcp.config_store import MCP_SCHEMA
from albert.protocol.frames import McpState
from albert.settings import Settings
from albert.storage.migrations import migrate
from albert.storage.ports import SqlStorage

# --- 1. backoff --------------------------------------------------------------------------

# A random draw between two bounds, both included: `random.Random(…).uniform`, or any
# callable of that shape (a test's fixed or seeded source).
Uniform = Callable[[float, float], float]

# What can end a server's failure: a retry; only a changed config (no MCP endpoint there,
# answers over the caps); or the user authorizing the server (OAuth).
Remedy = Literal["retry", "config", "authorization"]


class RecoveryPolicy(BaseModel):
    """The recovery schedule: retries with full jitter, then the half-open cool-down."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    base_seconds: float = Field(1.0, gt=0)
    max_seconds: float = Field(16.0, gt=0)
    attempts: int = Field(5, ge=0)
    cooldown_seconds: float = Field(60.0, ge=0)

    @classmethod
    def from_settings(cls, settings: Settings) -> RecoveryPolicy:
        """The policy configured for this deployment."""
        return cls(
            base_seconds=settings.mcp_retry_base_seconds,
            max_seconds=settings.mcp_retry_max_seconds,
            attempts=settings.mcp_retry_attempts,
            cooldown_seconds=settings.mcp_half_open_cooldown_seconds,
        )

    def ceiling(self, attempt: int) -> float:
        """The longest wait before retry number `attempt` (1-based): base·2^(n-1), capped."""
        if attempt < 1:
            raise ValueError("attempts are numbered from 1")
        return min(self.base_seconds * 2 ** (attempt - 1), self.max_seconds)

    def delay(self, attempt: int, uniform: Uniform) -> float:
        """Seconds to wait before retry number `attempt`: full jitter, drawn from
        `uniform` between 0 and the attempt's ceiling."""
        ceiling = self.ceiling(attempt)
        return min(max(uniform(0.0, ceiling), 0.0), ceiling)

    def ceilings(self) -> list[float]:
        """The ceiling of every retry of one recovery cycle, in order."""
        return [self.ceiling(n) for n in range(1, self.attempts + 1)]


class RecoveryCycle(BaseModel):
    """Where one server is in its recovery cycle (times are Unix seconds)."""

    model_config = ConfigDict(defer_build=True)

    attempts: int = 0
    next_at: float | None = None
    failed_at: float | None = None
    half_open_at: float | None = None  # when the cool-down after `failed_at` ends
    # What can end the last failure; anything but a retry stops the cycle when it is
    # planned (and keeps it stopped across a restart).
    remedy: Remedy = "retry"

    @property
    def final(self) -> bool:
        """No retry can fix the last failure: no retry and no half-open attempt."""
        return self.remedy != "retry"

    def begin(self, policy: RecoveryPolicy, now: float, uniform: Uniform) -> None:
        """Start a recovery cycle: the first retry after the first (jittered) delay."""
        self.attempts = 0
        self.failed_at = None
        self.half_open_at = None
        self.remedy = "retry"
        self._plan(policy, now, uniform)

    def record_failure(self, policy: RecoveryPolicy, now: float, uniform: Uniform) -> None:
        """A retry failed: plan the next one, or give up until the cool-down ends."""
        self.attempts += 1
        self._plan(policy, now, uniform)

    def replan(self, policy: RecoveryPolicy, now: float, uniform: Uniform) -> None:
        """Draw the planned retry's delay again, from `now` (the retry stays the same one)."""
        if self.next_at is not None:
            self.next_at = now + policy.delay(self.attempts + 1, uniform)

    def _plan(self, policy: RecoveryPolicy, now: float, uniform: Uniform) -> None:
        if self.attempts >= policy.attempts:
            self.next_at = None
            self.give_up(policy, now)
        else:
            self.next_at = now + policy.delay(self.attempts + 1, uniform)

    def give_up(self, policy: RecoveryPolicy, now: float) -> None:
        """Retries spent (or the half-open try failed): the cool-down starts now."""
        self.failed_at = now
        self.half_open_at = now + policy.cooldown_seconds

    def stop(self, now: float) -> None:
        """Failed for good (until the config changes, or the user authorizes, as `remedy`
        says): no retry, no half-open attempt."""
        self.next_at = None
        self.failed_at = now
        self.half_open_at = None

    def reset(self) -> None:
        """Connected again."""
        self.attempts = 0
        self.next_at = None
        self.failed_at = None
        self.half_open_at = None
        self.remedy = "retry"

    @property
    def exhausted(self) -> bool:
        """Every retry of the cycle failed."""
        return self.failed_at is not None

    def due(self, now: float) -> bool:
        """A scheduled retry is due."""
        return self.next_at is not None and self.next_at <= now

    def half_open_ready(self, policy: RecoveryPolicy, now: float) -> bool:
        """Exhausted, not stopped, and the cool-down has passed: one more attempt may be
        made."""
        return (
            self.half_open_at is not None
            and self.failed_at is not None
            and now - self.failed_at >= policy.cooldown_seconds
        )


# --- 2. states ---------------------------------------------------------------------------


# Which states each state may move to; McpServer refuses anything else.
_DOWN: frozenset[McpState] = frozenset(
    {"ready", "reconnecting", "failed", "needs_authorization", "disabled"}
)
TRANSITIONS: dict[McpState, frozenset[McpState]] = {
    "connecting": _DOWN,
    "ready": frozenset({"ready", "reconnecting", "disabled"}),
    "reconnecting": _DOWN,
    "failed": _DOWN,
    "needs_authorization": _DOWN,
    "disabled": frozenset({"disabled"}),
}


class IllegalTransition(RuntimeError):
    """A transition the state table does not allow: a bug, never a server's fault."""


# --- 3. the persisted cycle --------------------------------------------------------------

MAX_ERROR_CHARS = 500


class RecoveryLog:
    """Reads and writes `mcp_retry_state`: one row per server in a recovery cycle."""

    def __init__(self, sql: SqlStorage) -> None:
        migrate(sql, MCP_SCHEMA)
        self._sql = sql

    def save(self, name: str, url: str, cycle: RecoveryCycle, last_error: str | None) -> None:
        """Record where a server is in its cycle (a reset cycle removes the row)."""
        if cycle.next_at is None and cycle.failed_at is None:
            self.forget(name)
            return
        self._sql.execute(
            "INSERT INTO mcp_retry_state "
            "(name, url, attempts, next_at, failed_at, last_error, final, authorize) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
            "url = excluded.url, attempts = excluded.attempts, next_at = excluded.next_at, "
            "failed_at = excluded.failed_at, last_error = excluded.last_error, "
            "final = excluded.final, authorize = excluded.authorize",
            name,
            url,
            cycle.attempts,
            cycle.next_at,
            cycle.failed_at,
            (last_error or "")[:MAX_ERROR_CHARS] or None,
            int(cycle.final),
            int(cycle.remedy == "authorization"),
        )

    def load(self, name: str, url: str) -> tuple[RecoveryCycle, str | None] | None:
        """The cycle a server of this URL was in, with its last error; None if none."""
        rows = self._sql.execute(
            "SELECT url, attempts, next_at, failed_at, last_error, final, authorize "
            "FROM mcp_retry_state "
            "WHERE name = ?",
            name,
        )
        if not rows or rows[0]["url"] != url:
            return None
        row = rows[0]
        cycle = RecoveryCycle(
            attempts=int(row["attempts"]),
            next_at=None if row["next_at"] is None else float(row["next_at"]),
            failed_at=None if row["failed_at"] is None else float(row["failed_at"]),
            remedy=_remedy(bool(row["final"]), bool(row["authorize"])),
        )
        if cycle.next_at is None and cycle.failed_at is None:
            return None
        error = row["last_error"]
        return cycle, None if error is None else str(error)

    def forget(self, name: str) -> None:
        """The server is up, or its config changed or went: no cycle to resume."""
        self._sql.execute("DELETE FROM mcp_retry_state WHERE name = ?", name)


def _remedy(final: bool, authorize: bool) -> Remedy:
    """The remedy a row's two columns stand for (`authorize` is a final failure too)."""
    if authorize:
        return "authorization"
    return "config" if final else "retry"
