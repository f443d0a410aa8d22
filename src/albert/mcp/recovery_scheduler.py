"""The recovery scheduler: the recovery cycles of one object's servers, on its alarm.

Retries ride the object's single alarm (`AlarmPort`), never a sleeping request; `on_alarm`
runs every retry that is due. The half-open try runs before the next turn, and on the
alarm while the client watches (a socket is open): an abandoned client with a dead server
does not wake its object once per cool-down for ever. This is the only code that plans or
counts retries, and it holds the random source of the jitter (`Uniform`: given, e.g. a
seeded `random.Random(…).uniform`, or one of its own).

Each cycle is kept in the object's SQLite (`RecoveryLog`) as it changes: a retry in flight
when the object dies is not counted, so it runs again; a retry the restart made late by
more than `LATE_SECONDS` is drawn again from the restart, since every object the restart
woke would otherwise run its overdue retry at the same moment.

What is planned, and when a cycle stops, is `albert.mcp.recovery_policy`'s; an attempt and
the state it leads to are the server's (`albert.mcp.server.McpServer`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from albert.clock import Clock
from albert.mcp.alarm_port import AlarmPort
from albert.mcp.recovery_policy import RecoveryLog, RecoveryPolicy, Uniform
from albert.ports import SocketHub

if TYPE_CHECKING:
    from albert.mcp.server import McpServer

log = logging.getLogger(__name__)

# An alarm may ring a hair early; a retry due within this margin counts as due.
DUE_MARGIN_SECONDS = 0.05
# An alarm rings within milliseconds of its time; a retry found later than this when the
# object starts was held up by a restart (of the runtime, or of the object's machine).
LATE_SECONDS = 1.0

Attempt = Callable[["McpServer"], Awaitable[None]]
Plan = Callable[[RecoveryPolicy, float, Uniform], None]


class RecoveryScheduler:
    """Plans, arms and runs the recovery attempts of every server of one object."""

    def __init__(
        self,
        servers: Mapping[str, McpServer],
        *,
        policy: RecoveryPolicy,
        alarms: AlarmPort,
        clock: Clock,
        log: RecoveryLog | None = None,
        hub: SocketHub | None = None,
        uniform: Uniform | None = None,
    ) -> None:
        """`hub`: the client's sockets (failed servers are tried on the alarm only while one
        is open); `uniform`: the random source of the jitter; without one, a
        `random.Random` of this scheduler's own, seeded by the system (made here, in a
        request or an alarm: never at import, where a Workers snapshot would give every
        isolate the same one)."""
        self._servers = servers
        self.policy = policy
        self._alarms = alarms
        self._clock = clock
        self._log = log
        self._hub = hub
        self._uniform = uniform if uniform is not None else random.Random().uniform

    def _now(self) -> float:
        return self._clock.now_ms() / 1000

    def _watched(self) -> bool:
        return self._hub is not None and bool(self._hub.sockets())

    async def begin(self, server: McpServer) -> None:
        """Start a recovery cycle for a server that is not up (a no-op for others)."""
        if not server.current or server.state in ("ready", "disabled"):
            return
        self._plan_after_failure(server, server.recovery.begin)
        server.recovery_planned()
        self._record(server)
        await self.arm()

    def resume(self, server: McpServer) -> bool:
        """Carry on a cycle the object was in before it restarted; False if there is none.

        The server is then reconnecting (its next retry when the alarm rings) or failed
        (waiting out its cool-down), never tried at once.
        """
        if self._log is None or not server.current or server.state != "connecting":
            return False
        found = self._log.load(server.name, server.config.url)
        if found is None:
            return False
        server.recovery, error = found
        cycle = server.recovery
        if cycle.failed_at is not None and cycle.half_open_at is None and not cycle.final:
            cycle.give_up(self.policy, cycle.failed_at)
        now = self._now()
        if cycle.next_at is not None and cycle.next_at < now - LATE_SECONDS:
            # Slept through by a restart: drawn again, or every object it woke would run
            # its overdue retry at once.
            cycle.replan(self.policy, now, self._uniform)
            self._record(server)
        server.connect_failed(error or "not reachable before the restart", cycle.remedy)
        server.recovery_planned()
        log.info(
            "MCP server %s: recovery resumed after a restart (%d attempt(s) made)",
            server.name,
            cycle.attempts,
        )
        return True

    def forget(self, name: str) -> None:
        """The server is up, or its config changed or went: a new cycle starts from nothing."""
        if self._log is not None:
            self._log.forget(name)

    def _record(self, server: McpServer) -> None:
        if self._log is None or not server.current:
            return
        try:
            self._log.save(server.name, server.config.url, server.recovery, server.last_error)
        except Exception:
            # Retries still run from memory; only a restart would begin the cycle anew.
            log.exception("could not record the recovery cycle of MCP server %s", server.name)

    async def crashed(self, server: McpServer) -> None:
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
        cycle = server.recovery
        if server.state == "reconnecting":
            # Planned already when it died after planning (e.g. while arming): keep that.
            if cycle.next_at is None:
                cycle.record_failure(self.policy, self._now(), self._uniform)
                server.retry_failed()
        else:
            cycle.give_up(self.policy, self._now())
            server.half_open_failed()
        self._record(server)
        await self.arm()

    def _planned(self) -> Iterable[float]:
        watched = self._watched()
        for server in self._servers.values():
            cycle = server.recovery
            if cycle.next_at is not None:
                yield cycle.next_at
            elif watched and server.state == "failed" and cycle.half_open_at is not None:
                yield cycle.half_open_at

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
        due = [s for s in self._servers.values() if s.recovery.due(now)]
        half_open = self._half_open_due(now) if self._watched() else []
        try:
            await asyncio.gather(
                *(self._guarded(self._retry, s) for s in due),
                *(self._guarded(self._half_open, s) for s in half_open),
            )
        finally:
            await self.arm()

    async def _retry(self, server: McpServer) -> None:
        # Only in memory: should the object die during the attempt, the stored plan
        # still says it is due, and it runs again after the restart.
        server.recovery.next_at = None
        if await server.connect() or server.state == "disabled":
            self._record(server)
            return
        self._plan_after_failure(server, server.recovery.record_failure)
        server.retry_failed()
        self._record(server)

    def _plan_after_failure(self, server: McpServer, plan: Plan) -> None:
        """After a failed attempt: `plan` along the schedule, or stop when the failure is
        one no retry can fix."""
        if server.recovery.final:
            server.recovery.stop(self._now())
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

    async def _guarded(self, attempt: Attempt, server: McpServer) -> None:
        """Run one attempt; one that dies of an exception is logged and goes on as failed."""
        try:
            await attempt(server)
        except Exception as exc:
            log.exception("MCP server %s: an attempt died", server.name)
            server.attempt_died(exc)
            await self.crashed(server)

    def _half_open_due(self, now: float) -> list[McpServer]:
        return [
            s
            for s in self._servers.values()
            if s.state == "failed" and s.recovery.half_open_ready(self.policy, now)
        ]

    async def _half_open(self, server: McpServer) -> None:
        # Failing it restarts the cool-down.
        if await server.connect() or server.state == "disabled":
            self._record(server)
            return
        self._plan_after_failure(
            server, lambda policy, now, _: server.recovery.give_up(policy, now)
        )
        server.half_open_failed()
        self._record(server)
