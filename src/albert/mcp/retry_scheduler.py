"""The recovery scheduler: when a dropped or unreachable server is tried again.

Retries follow the ReconnectPolicy schedule (`albert.mcp.retry_policy`) and ride
the object's single alarm (`AlarmPort`), never a sleeping request: the platform
wakes the object at the earliest planned retry and `on_alarm` runs every retry
that is due. When a cycle's retries are spent the server is `failed` until,
after the cool-down, one more attempt is made (`probe_half_open`): before the
next turn, and on the alarm while the client watches (a socket is open), so a
server that came back is picked up within one cool-down without a message. The
alarm is not kept ringing for failed servers nobody watches: an abandoned client
with a dead server would otherwise wake its object once per cool-down for ever.
Times are Unix seconds from the Clock port. Each server's place in its cycle is
its `retry` (`RetryState`); this scheduler is the only code that plans or counts
retries, and it records each plan in the object's SQLite (`RetryLog`), so a
restarted object resumes the cycle (`resume`) instead of beginning a new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from albert.clock import Clock
from albert.mcp.alarm_port import AlarmPort
from albert.mcp.retry_log import RetryLog
from albert.mcp.retry_policy import ReconnectPolicy
from albert.mcp.server_state import ServerState

log = logging.getLogger(__name__)

# An alarm may ring a hair early; a retry due within this margin counts as due.
DUE_MARGIN_SECONDS = 0.05

Connect = Callable[[ServerState], Awaitable[bool]]
Attempt = Callable[[ServerState], Awaitable[None]]


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
    ) -> None:
        self._servers = servers
        self.policy = policy
        self._alarms = alarms
        self._clock = clock
        self._connect = connect
        self._log = log
        self._watched = watched

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
                server.retry.record_failure(self.policy, self._now())
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

    def _plan_after_failure(
        self, server: ServerState, plan: Callable[[ReconnectPolicy, float], None]
    ) -> None:
        """After a failed attempt: `plan` along the schedule, or stop when the failure is
        one no retry can fix."""
        if server.final_failure:
            server.retry.stop(self._now(), authorize=server.authorization_needed)
        else:
            plan(self.policy, self._now())

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
        self._plan_after_failure(server, server.retry.give_up)
        server.half_open_failed()
        self._record(server)
