"""The MCP reconnection policy: each server's state machine, the backoff schedule, the
recovery cycle kept in the object's SQLite, and the scheduler that runs it on the alarm.

Read top to bottom:

1. **Backoff** (`ReconnectPolicy`, `RetryState`). A dropped or unreachable server is
   retried `attempts` times with full jitter: retry n waits a random time between 0 and
   min(max_seconds, base·2^(n-1)), ceilings of 1, 2, 4, 8, 16 s by default (Cloudflare's
   Agents SDK jitters its retries too). Without the jitter every object that lost the
   same server at the same moment (a restart of either side) retried it in lockstep,
   five times, and all gave up together. When every retry failed the server is
   `failed`; after a cool-down one more attempt is made (half-open: by the next user
   message, or by the alarm while a socket is open), which brings it back or starts the
   cool-down again. The cool-down is not jittered: it counts from a failure time the
   jittered retries spread already. A failure no retry can fix (no MCP endpoint, answers
   over the caps, the server asking for the user's authorization) stops the cycle at
   once: no retry, no half-open try.
2. **States** (`ServerState`): every change of a server's state happens there.

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
   server asked for OAuth and only the user can go on (albert.mcp.oauth_flow). Each
   transition is logged and broadcast through `on_change`; so are the two changes the
   browser shows besides the state: the number of tools and the quarantined ones.
   Nothing outside `ServerState` assigns `state`.
3. **The persisted cycle** (`RetryLog`): the attempt count, the next retry time and the
   time the cycle was spent, in `mcp_retry_state`, so an evicted or restarted object
   carries on where it was instead of hammering a dead server with a fresh cycle. A row
   remembers the URL it was written for (a replaced config starts afresh); a retry in
   flight when the object dies is not counted, so it runs again. A retry the restart made
   late by more than `LATE_SECONDS` is drawn again from the restart: every object the
   restart woke would otherwise run its overdue retry at the same moment.
4. **The scheduler** (`RecoveryScheduler`): retries ride the object's single alarm
   (`AlarmPort`), never a sleeping request; `on_alarm` runs every retry that is due.
   The half-open try runs before the next turn, and on the alarm while the client
   watches (a socket is open): an abandoned client with a dead server does not wake its
   object once per cool-down for ever. It is the only code that plans or counts retries,
   and it holds the random source of the jitter (`Uniform`: given, e.g. a seeded
   `random.Random(…).uniform`, or one of its own).

Times are Unix seconds from the Clock port.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from albert.clock import Clock
from albert.mcp.alarm_port import AlarmPort
from albert.mcp.classify import ServerKind, classify_server
from albert.mcp.config_store import MCP_SCHEMA
from albert.mcp.configs import McpServerConfig
from albert.mcp.remote_tool import RemoteToolSpec
from albert.protocol.frames import McpState
from albert.settings import Settings
from albert.storage.migrations import migrate
from albert.storage.ports import SqlStorage

if TYPE_CHECKING:
    from albert.mcp.connection import McpConnection

log = logging.getLogger(__name__)


# --- 1. backoff --------------------------------------------------------------------------

# A random draw between two bounds, both included: `random.Random(…).uniform`, or any
# callable of that shape (a test's fixed or seeded source).
Uniform = Callable[[float, float], float]


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


class RetryState(BaseModel):
    """Where one server is in its recovery cycle (times are Unix seconds)."""

    model_config = ConfigDict(defer_build=True)

    attempts: int = 0
    next_at: float | None = None
    failed_at: float | None = None
    half_open_at: float | None = None  # when the cool-down after `failed_at` ends
    final: bool = False  # failed for a reason no retry can fix: no half-open attempt
    authorize: bool = False  # final because the server waits for the user's authorization

    def begin(self, policy: ReconnectPolicy, now: float, uniform: Uniform) -> None:
        """Start a recovery cycle: the first retry after the first (jittered) delay."""
        self.attempts = 0
        self.failed_at = None
        self.half_open_at = None
        self.final = False
        self.authorize = False
        self._plan(policy, now, uniform)

    def record_failure(self, policy: ReconnectPolicy, now: float, uniform: Uniform) -> None:
        """A retry failed: plan the next one, or give up until the cool-down ends."""
        self.attempts += 1
        self._plan(policy, now, uniform)

    def replan(self, policy: ReconnectPolicy, now: float, uniform: Uniform) -> None:
        """Draw the planned retry's delay again, from `now` (the retry stays the same one)."""
        if self.next_at is not None:
            self.next_at = now + policy.delay(self.attempts + 1, uniform)

    def _plan(self, policy: ReconnectPolicy, now: float, uniform: Uniform) -> None:
        if self.attempts >= policy.attempts:
            self.next_at = None
            self.give_up(policy, now)
        else:
            self.next_at = now + policy.delay(self.attempts + 1, uniform)

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


# --- 2. states ---------------------------------------------------------------------------


# Which states each state may move to; `_enter` refuses anything else.
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


@dataclass(eq=False)
class ServerState:
    """What the manager knows about one configured server, and how it may change."""

    config: McpServerConfig
    on_change: Callable[[], None]
    state: McpState = "connecting"
    conn: McpConnection | None = None
    retry: RetryState = field(default_factory=RetryState)
    tools: list[RemoteToolSpec] | None = None
    checked_at: float = float("-inf")
    tools_stale: bool = False
    kind: ServerKind | None = None
    instructions: str | None = None
    server_name: str = ""
    last_error: str | None = None
    quarantined: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    first_attempt: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    retired: bool = False
    final_failure: bool = False
    authorization_needed: bool = False

    @classmethod
    def for_config(cls, config: McpServerConfig, on_change: Callable[[], None]) -> ServerState:
        """A freshly configured server: connecting, or disabled by its config."""
        return cls(
            config=config,
            on_change=on_change,
            state="connecting" if config.enabled else "disabled",
        )

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def current(self) -> bool:
        """Still the manager's server of this name (not replaced or removed since)."""
        return not self.retired

    # --- transitions -----------------------------------------------------------------

    def connected(self, conn: McpConnection, specs: list[RemoteToolSpec], at: float) -> None:
        """A connection attempt succeeded: ready, with the tools it listed."""
        self._allow("ready", "connected")
        self.conn = conn
        self.instructions = conn.instructions
        self.server_name = conn.server_name
        self._take_tools(specs, at)
        self.last_error = None
        self.final_failure = False
        self.authorization_needed = False
        self.retry.reset()
        self._enter("ready", f"{len(specs)} tools")

    def lost(self, reason: str) -> bool:
        """The connection is gone; False when the server was not up (nothing changes)."""
        if self.state not in ("ready", "connecting"):
            return False
        self.conn = None
        self.last_error = reason
        self._enter("reconnecting", f"lost: {reason}", level=logging.WARNING)
        return True

    def recovery_planned(self) -> None:
        """A recovery cycle began (`retry` holds its plan): reconnecting, or failed at once."""
        self._enter_by_retry(f"recovery planned ({self.last_error})")

    def retry_failed(self) -> None:
        """A scheduled retry failed (`retry` counts it): reconnecting, or failed when spent."""
        self._enter_by_retry(f"retry {self.retry.attempts} failed ({self.last_error})")

    def half_open_failed(self) -> None:
        """The one attempt after the cool-down failed: the cool-down starts again."""
        self._enter("failed", f"half-open attempt failed ({self.last_error})")

    def disabled(self) -> None:
        """The config is gone or switched off: nothing connects any more."""
        if self.state != "disabled":
            self._enter("disabled", "config removed or disabled")

    # --- changes that are not transitions --------------------------------------------

    def connect_failed(self, reason: str, *, final: bool = False, authorize: bool = False) -> None:
        """An attempt failed; the state is the recovery scheduler's to change.

        `final`: no retry can fix it (no MCP endpoint there, answers over the caps), so the
        scheduler stops rather than retrying; `authorize` (final too): the server asks for
        the user's OAuth authorization.
        """
        self.last_error = reason
        self.final_failure = final or authorize
        self.authorization_needed = authorize

    def tools_listed(self, specs: list[RemoteToolSpec], at: float) -> None:
        """A fresh tool list (the health check passed); broadcast when the count changed."""
        before = len(self.tools or [])
        self._take_tools(specs, at)
        if len(specs) != before:
            self.on_change()

    def tools_changed(self) -> None:
        """The server said its tool list changed: list it again before the next use."""
        self.tools_stale = True

    def answered(self, at: float) -> None:
        """A call succeeded: that counts as a passed health check."""
        self.checked_at = at

    def health_unknown(self) -> None:
        """Something suggests the server may be gone: check it before the next use."""
        self.checked_at = float("-inf")

    def quarantine(self, rejected: list[str], renamed: list[str] | None = None) -> None:
        """The tools left out this turn, and those offered under another name; broadcast
        when either changed."""
        renamed = renamed or []
        if rejected != self.quarantined or renamed != self.renamed:
            self.quarantined = rejected
            self.renamed = renamed
            self.on_change()

    def _take_tools(self, specs: list[RemoteToolSpec], at: float) -> None:
        self.tools = specs
        self.tools_stale = False
        self.checked_at = at
        # The tool set is the strongest evidence of what a server is; it can change.
        self.kind = classify_server([s.name for s in specs], self.config.kind)

    def _enter_by_retry(self, why: str) -> None:
        if not self.retry.exhausted:
            self._enter("reconnecting", why)
        elif self.retry.authorize:
            self._enter("needs_authorization", why)
        else:
            self._enter("failed", why)

    def _allow(self, state: McpState, why: str) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"MCP server {self.name}: {self.state} → {state} ({why})")

    def _enter(self, state: McpState, why: str, *, level: int = logging.INFO) -> None:
        self._allow(state, why)
        log.log(level, "MCP server %s: %s → %s, %s", self.name, self.state, state, why)
        self.state = state
        self.on_change()


# --- 3. the persisted cycle --------------------------------------------------------------

MAX_ERROR_CHARS = 500


class RetryLog:
    """Reads and writes `mcp_retry_state`: one row per server in a recovery cycle."""

    def __init__(self, sql: SqlStorage) -> None:
        migrate(sql, MCP_SCHEMA)
        self._sql = sql

    def save(self, name: str, url: str, retry: RetryState, last_error: str | None) -> None:
        """Record where a server is in its cycle (a reset state removes the row)."""
        if retry.next_at is None and retry.failed_at is None:
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
            retry.attempts,
            retry.next_at,
            retry.failed_at,
            (last_error or "")[:MAX_ERROR_CHARS] or None,
            int(retry.final),
            int(retry.authorize),
        )

    def load(self, name: str, url: str) -> tuple[RetryState, str | None] | None:
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
        retry = RetryState(
            attempts=int(row["attempts"]),
            next_at=None if row["next_at"] is None else float(row["next_at"]),
            failed_at=None if row["failed_at"] is None else float(row["failed_at"]),
            final=bool(row["final"]),
            authorize=bool(row["authorize"]),
        )
        if retry.next_at is None and retry.failed_at is None:
            return None
        error = row["last_error"]
        return retry, None if error is None else str(error)

    def forget(self, name: str) -> None:
        """The server is up, or its config changed or went: no cycle to resume."""
        self._sql.execute("DELETE FROM mcp_retry_state WHERE name = ?", name)


# --- 4. the scheduler --------------------------------------------------------------------


# An alarm may ring a hair early; a retry due within this margin counts as due.
DUE_MARGIN_SECONDS = 0.05
# An alarm rings within milliseconds of its time; a retry found later than this when the
# object starts was held up by a restart (of the runtime, or of the object's machine).
LATE_SECONDS = 1.0

Connect = Callable[[ServerState], Awaitable[bool]]
Attempt = Callable[[ServerState], Awaitable[None]]
Plan = Callable[[ReconnectPolicy, float, Uniform], None]


def internal_error(exc: BaseException) -> str:
    """The `last_error` of a server whose attempt died of a defect (not the server's doing)."""
    return f"internal error ({type(exc).__name__}: {exc})"[:300]


class RecoveryScheduler:
    """Plans, arms and runs the reconnection attempts of every server of one object."""

    def __init__(
        self,
        servers: Mapping[str, ServerState],
        *,
        policy: ReconnectPolicy,
        alarms: AlarmPort,
        clock: Clock,
        connect: Connect,
        log: RetryLog | None = None,
        watched: Callable[[], bool] = lambda: False,
        uniform: Uniform | None = None,
    ) -> None:
        """`uniform`: the random source of the jitter; without one, a `random.Random` of
        this scheduler's own, seeded by the system (made here, in a request or an alarm:
        never at import, where a Workers snapshot would give every isolate the same one)."""
        self._servers = servers
        self.policy = policy
        self._alarms = alarms
        self._clock = clock
        self._connect = connect
        self._log = log
        self._watched = watched
        self._uniform = uniform if uniform is not None else random.Random().uniform

    def _now(self) -> float:
        return self._clock.now_ms() / 1000

    async def begin(self, server: ServerState) -> None:
        """Start a recovery cycle for a server that is not up (a no-op for others)."""
        if not server.current or server.state in ("ready", "disabled"):
            return
        self._plan_after_failure(server, server.retry.begin)
        server.recovery_planned()
        self._record(server)
        await self.arm()

    def resume(self, server: ServerState) -> bool:
        """Carry on a cycle the object was in before it restarted; False if there is none.

        The server is then reconnecting (its next retry when the alarm rings) or failed
        (waiting out its cool-down), never tried at once.
        """
        if self._log is None or not server.current or server.state != "connecting":
            return False
        found = self._log.load(server.name, server.config.url)
        if found is None:
            return False
        server.retry, error = found
        retry = server.retry
        if retry.failed_at is not None and retry.half_open_at is None and not retry.final:
            retry.give_up(self.policy, retry.failed_at)
        now = self._now()
        if retry.next_at is not None and retry.next_at < now - LATE_SECONDS:
            # Slept through by a restart: drawn again, or every object it woke would run
            # its overdue retry at once.
            retry.replan(self.policy, now, self._uniform)
            self._record(server)
        server.connect_failed(
            error or "not reachable before the restart",
            final=retry.final,
            authorize=retry.authorize,
        )
        server.recovery_planned()
        log.info(
            "MCP server %s: recovery resumed after a restart (%d attempt(s) made)",
            server.name,
            server.retry.attempts,
        )
        return True

    def forget(self, name: str) -> None:
        """The server's config changed or went: a new cycle starts from nothing."""
        if self._log is not None:
            self._log.forget(name)

    def _record(self, server: ServerState) -> None:
        if self._log is None or not server.current:
            return
        try:
            self._log.save(server.name, server.config.url, server.retry, server.last_error)
        except Exception:
            # Retries still run from memory; only a restart would begin the cycle anew.
            log.exception("could not record the retry state of MCP server %s", server.name)

    async def crashed(self, server: ServerState) -> None:
        """An attempt for this server died of an exception: carry on along the schedule.

        Its `last_error` was set by whoever saw the exception. A first attempt starts
        the recovery cycle, a retry counts as failed, a half-open try restarts the
        cool-down; a server that is up (or gone) is left alone.
        """
        if not server.current or server.state in ("ready", "disabled"):
            return
        if server.state == "connecting":
            await self.begin(server)
            return
        if server.state == "reconnecting":
            # Planned already when it died after planning (e.g. while arming): keep that.
            if server.retry.next_at is None:
                server.retry.record_failure(self.policy, self._now(), self._uniform)
                server.retry_failed()
        else:
            server.retry.give_up(self.policy, self._now())
            server.half_open_failed()
        self._record(server)
        await self.arm()

    def _planned(self) -> Iterable[float]:
        watched = self._watched()
        for server in self._servers.values():
            if server.retry.next_at is not None:
                yield server.retry.next_at
            elif watched and server.state == "failed" and server.retry.half_open_at is not None:
                yield server.retry.half_open_at

    async def arm(self) -> None:
        """Set the alarm to the earliest planned retry, or clear it when none is planned."""
        due = list(self._planned())
        try:
            if due:
                await self._alarms.set_alarm(int(min(due) * 1000))
            elif await self._alarms.get_alarm() is not None:
                await self._alarms.delete_alarm()
        except Exception:
            log.exception("could not set the MCP retry alarm")

    async def on_alarm(self) -> None:
        """The alarm rang: run every retry that is due, then plan the next."""
        now = self._now() + DUE_MARGIN_SECONDS
        due = [s for s in self._servers.values() if s.retry.due(now)]
        half_open = self._half_open_due(now) if self._watched() else []
        try:
            await asyncio.gather(
                *(self._guarded(self._retry, s) for s in due),
                *(self._guarded(self._half_open, s) for s in half_open),
            )
        finally:
            await self.arm()

    async def _retry(self, server: ServerState) -> None:
        # Only in memory: should the object die during the attempt, the stored plan
        # still says it is due, and it runs again after the restart.
        server.retry.next_at = None
        if await self._connect(server) or server.state == "disabled":
            self._record(server)
            return
        self._plan_after_failure(server, server.retry.record_failure)
        server.retry_failed()
        self._record(server)

    def _plan_after_failure(self, server: ServerState, plan: Plan) -> None:
        """After a failed attempt: `plan` along the schedule, or stop when the failure is
        one no retry can fix."""
        if server.final_failure:
            server.retry.stop(self._now(), authorize=server.authorization_needed)
        else:
            plan(self.policy, self._now(), self._uniform)

    async def probe_half_open(self) -> None:
        """Before a turn: one more attempt for each failed server past its cool-down."""
        probes = self._half_open_due(self._now())
        if probes:
            try:
                await asyncio.gather(*(self._guarded(self._half_open, s) for s in probes))
            finally:
                await self.arm()

    async def _guarded(self, attempt: Attempt, server: ServerState) -> None:
        """Run one attempt; one that dies of an exception is logged and goes on as failed."""
        try:
            await attempt(server)
        except Exception as exc:
            log.exception("MCP server %s: an attempt died", server.name)
            server.connect_failed(internal_error(exc))
            await self.crashed(server)

    def _half_open_due(self, now: float) -> list[ServerState]:
        return [
            s
            for s in self._servers.values()
            if s.state == "failed" and s.retry.half_open_ready(self.policy, now)
        ]

    async def _half_open(self, server: ServerState) -> None:
        # Failing it restarts the cool-down.
        if await self._connect(server) or server.state == "disabled":
            self._record(server)
            return
        self._plan_after_failure(server, lambda policy, now, _: server.retry.give_up(policy, now))
        server.half_open_failed()
        self._record(server)
