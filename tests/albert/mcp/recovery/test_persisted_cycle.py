"""Recovery cycles survive a restart: the plan is on a real SQLite file, read back by a new
scheduler on the reopened file, and the schedule carries on where it was."""

from __future__ import annotations

import random
from pathlib import Path

from albert.cloudflare.sql import WorkersSql
from albert.mcp.configs import McpServerConfig
from albert.mcp.recovery_policy import RecoveryCycle, RecoveryLog
from albert.mcp.recovery_scheduler import LATE_SECONDS, RecoveryScheduler
from albert.mcp.server import McpServer
from miniflare.storage import SqlStorage
from tests.albert.mcp.recovery.scripted import RecordingAlarm, ScriptedServer, site_for
from tests.albert.mcp.recovery.test_scheduler import (
    POLICY,
    SEED,
    START_MS,
    Connect,
    planned_wait,
    ring,
)
from tests.support.clock import ManualClock

URL = "http://x/mcp"


class Object:
    """One life of an object: its storage file, scheduler and server, on a shared clock."""

    def __init__(self, path: Path, clock: ManualClock, alarm: RecordingAlarm, url: str = URL):
        self.storage = SqlStorage(path)
        self.log = RecoveryLog(WorkersSql(self.storage))
        self.connect = Connect(clock)
        servers: dict[str, McpServer] = {}
        self.scheduler = RecoveryScheduler(
            servers,
            policy=POLICY,
            alarms=alarm,
            clock=clock,
            log=self.log,
            uniform=random.Random(SEED).uniform,
        )
        site = site_for(self.scheduler, servers, clock)
        config = McpServerConfig(name="s", url=url)
        self.server = servers["s"] = ScriptedServer(config, site, self.connect)

    def close(self) -> None:
        self.storage.close()


async def test_a_restart_mid_cycle_carries_on_with_the_next_delay(tmp_path: Path) -> None:
    clock, alarm = ManualClock(START_MS), RecordingAlarm()
    first = Object(tmp_path / "o.sqlite", clock, alarm)
    await first.scheduler.begin(first.server)
    ring(clock, alarm)
    await first.scheduler.on_alarm()  # retry 1 fails; retry 2 planned within 2 s
    assert first.server.recovery.attempts == 1 and 0 <= planned_wait(first.server, clock) <= 2
    planned = first.server.recovery.next_at
    first.close()

    # Evicted. The platform kept the alarm; a new instance opens the same file.
    again = Object(tmp_path / "o.sqlite", clock, alarm)
    assert again.scheduler.resume(again.server)
    assert again.server.state == "reconnecting" and again.server.recovery.attempts == 1
    assert again.server.recovery.next_at == planned  # the plan, as it was stored
    assert again.server.last_error.startswith("server unreachable")
    assert again.connect.attempts == 0  # not tried at once: the plan says when
    ring(clock, alarm)
    await again.scheduler.on_alarm()  # retry 2, then retry 3 (the last) within 2 s
    assert again.server.recovery.attempts == 2 and 0 <= planned_wait(again.server, clock) <= 2
    again.close()

    # Woken by its alarm, on time: the plan is kept, not drawn again.
    third = Object(tmp_path / "o.sqlite", clock, alarm)
    ring(clock, alarm)
    assert third.scheduler.resume(third.server)
    await third.scheduler.on_alarm()
    assert third.server.state == "failed" and third.server.recovery.attempts == 3
    assert alarm.at_ms is None
    # Three retries over three lives: exactly the policy's three, never a new cycle.
    assert first.connect.attempts + again.connect.attempts + third.connect.attempts == 3
    third.close()


async def test_the_half_open_cool_down_holds_across_a_restart(tmp_path: Path) -> None:
    clock, alarm = ManualClock(START_MS), RecordingAlarm()
    first = Object(tmp_path / "o.sqlite", clock, alarm)
    first.scheduler.policy = POLICY.model_copy(update={"attempts": 0})
    await first.scheduler.begin(first.server)
    assert first.server.state == "failed"
    first.close()

    clock.advance(30)
    again = Object(tmp_path / "o.sqlite", clock, alarm)
    assert again.scheduler.resume(again.server) and again.server.state == "failed"
    await again.scheduler.probe_half_open()
    assert again.connect.attempts == 0  # 30 s of the 60 s cool-down are left
    clock.advance(30)
    again.connect.up = True
    await again.scheduler.probe_half_open()
    assert again.server.state == "ready"
    again.close()

    # Up again: nothing left to resume.
    last = Object(tmp_path / "o.sqlite", clock, alarm)
    assert not last.scheduler.resume(last.server) and last.server.state == "connecting"
    last.close()


async def test_a_retry_cut_off_by_the_restart_runs_again(tmp_path: Path) -> None:
    clock, alarm = ManualClock(START_MS), RecordingAlarm()
    first = Object(tmp_path / "o.sqlite", clock, alarm)
    await first.scheduler.begin(first.server)
    first.server.recovery.next_at = None  # the retry began, and the object died during it
    first.close()

    again = Object(tmp_path / "o.sqlite", clock, alarm)
    assert again.scheduler.resume(again.server)
    assert again.server.recovery.attempts == 0 and again.server.recovery.next_at is not None
    ring(clock, alarm)
    await again.scheduler.on_alarm()
    assert again.connect.attempts == 1 and again.server.recovery.attempts == 1
    again.close()


async def test_a_retry_a_restart_made_late_is_drawn_again_from_the_restart(
    tmp_path: Path,
) -> None:
    clock, alarm = ManualClock(START_MS), RecordingAlarm()
    first = Object(tmp_path / "o.sqlite", clock, alarm)
    await first.scheduler.begin(first.server)
    ring(clock, alarm)
    await first.scheduler.on_alarm()  # retry 1 fails; retry 2 planned within 2 s
    planned = first.server.recovery.next_at
    assert planned is not None
    first.close()

    # The runtime was down well past the planned retry.
    clock.ms = int((planned + LATE_SECONDS + 30) * 1000)
    again = Object(tmp_path / "o.sqlite", clock, alarm)
    assert again.scheduler.resume(again.server)
    # Still retry 2, within its ceiling from now, not at once with every other object
    # the restart woke; and stored so.
    assert again.server.recovery.attempts == 1
    assert 0 <= planned_wait(again.server, clock) <= POLICY.ceiling(2)
    stored = again.log.load("s", URL)
    assert stored is not None and stored[0].next_at == again.server.recovery.next_at
    await again.scheduler.arm()
    ring(clock, alarm)
    await again.scheduler.on_alarm()
    assert again.connect.attempts == 1 and again.server.recovery.attempts == 2
    again.close()


async def test_a_replaced_url_or_a_forgotten_server_starts_afresh(tmp_path: Path) -> None:
    clock, alarm = ManualClock(START_MS), RecordingAlarm()
    first = Object(tmp_path / "o.sqlite", clock, alarm)
    await first.scheduler.begin(first.server)
    first.close()

    other = Object(tmp_path / "o.sqlite", clock, alarm, url="http://y/mcp")
    assert not other.scheduler.resume(other.server)
    assert other.server.state == "connecting"
    other.scheduler.forget("s")
    other.close()

    same = Object(tmp_path / "o.sqlite", clock, alarm)
    assert not same.scheduler.resume(same.server)
    same.close()


def test_the_log_round_trips_a_state_and_drops_a_reset_one(tmp_path: Path) -> None:
    storage = SqlStorage(tmp_path / "o.sqlite")
    log = RecoveryLog(WorkersSql(storage))
    log.save("s", URL, RecoveryCycle(attempts=2, next_at=12.5), "boom")
    assert log.load("s", URL) == (RecoveryCycle(attempts=2, next_at=12.5), "boom")
    log.save("s", URL, RecoveryCycle(), None)
    assert log.load("s", URL) is None
    storage.close()


async def test_a_server_waiting_for_authorization_still_waits_after_a_restart(
    tmp_path: Path,
) -> None:
    clock, alarm = ManualClock(START_MS), RecordingAlarm()
    first = Object(tmp_path / "o.sqlite", clock, alarm)
    first.server.connect_failed("the server needs authorization (HTTP 401)", "authorization")
    await first.scheduler.begin(first.server)
    assert first.server.state == "needs_authorization" and alarm.at_ms is None
    first.close()

    again = Object(tmp_path / "o.sqlite", clock, alarm)
    assert again.scheduler.resume(again.server)
    assert again.server.state == "needs_authorization"
    assert again.server.last_error == "the server needs authorization (HTTP 401)"
    # No retry and no half-open attempt, however long it waits.
    clock.advance(POLICY.cooldown_seconds * 10)
    await again.scheduler.on_alarm()
    await again.scheduler.probe_half_open()
    assert again.connect.attempts == 0 and again.server.state == "needs_authorization"
    again.close()
