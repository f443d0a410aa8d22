"""The recovery scheduler on a manual clock: the alarm follows the plan, retries run when due,
each after a delay drawn between 0 and its ceiling (a seeded source: the same run each time)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from albert.mcp.configs import McpServerConfig
from albert.mcp.recovery_policy import RecoveryPolicy, Uniform
from albert.mcp.recovery_scheduler import DUE_MARGIN_SECONDS, RecoveryScheduler
from albert.mcp.server import McpServer
from tests.albert.mcp.recovery.scripted import RecordingAlarm, ScriptedServer, site_for
from tests.support.clock import ManualClock

POLICY = RecoveryPolicy(base_seconds=1, max_seconds=2, attempts=3, cooldown_seconds=60)
START_MS = 1_000_000_000_000
SEED = 2024


@dataclass
class FakeConnection:
    instructions: str | None = None
    server_name: str = "s"
    alive: bool = True


class Connect:
    """Fails until told to succeed; counts its attempts."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.up = False
        self.attempts = 0

    async def __call__(self, server: McpServer) -> bool:
        self.attempts += 1
        if not self.up:
            server.connect_failed("server unreachable")
            return False
        server.connected(FakeConnection(), [], self.clock.monotonic())  # type: ignore[arg-type]
        return True


class Watchers:
    """The client's sockets: one while `watching`, none otherwise."""

    def __init__(self, watching: bool = False) -> None:
        self.watching = watching

    def sockets(self) -> list[Watchers]:
        return [self] if self.watching else []

    def send(self, text: str) -> None:
        pass

    def close(self, code: int, reason: str) -> None:
        pass


def setup(
    uniform: Uniform | None = None, hub: Watchers | None = None
) -> tuple[RecoveryScheduler, ScriptedServer, ManualClock, RecordingAlarm, Connect]:
    clock = ManualClock(START_MS)
    alarm = RecordingAlarm()
    connect = Connect(clock)
    servers: dict[str, McpServer] = {}
    scheduler = RecoveryScheduler(
        servers,
        policy=POLICY,
        alarms=alarm,
        clock=clock,
        hub=hub,
        uniform=uniform or random.Random(SEED).uniform,
    )
    config = McpServerConfig(name="s", url="http://x/mcp")
    server = servers["s"] = ScriptedServer(config, site_for(scheduler, servers, clock), connect)
    return scheduler, server, clock, alarm, connect


def at_ceiling(low: float, high: float) -> float:
    """A jitter source that always draws the longest wait."""
    return high


def seconds_ahead(alarm: RecordingAlarm, clock: ManualClock) -> float:
    """How far ahead of the clock the alarm is set."""
    assert alarm.at_ms is not None
    return (alarm.at_ms - clock.now_ms()) / 1000


def planned_wait(server: McpServer, clock: ManualClock) -> float:
    """How long until the planned retry, as the plan says (the alarm holds it in ms)."""
    assert server.recovery.next_at is not None
    return server.recovery.next_at - clock.now_ms() / 1000


def ring(clock: ManualClock, alarm: RecordingAlarm) -> None:
    """Move the clock to the alarm's time, as the platform does before calling `alarm()`."""
    assert alarm.at_ms is not None
    clock.ms = alarm.at_ms


async def test_retries_follow_the_jittered_plan_on_the_alarm_then_give_up() -> None:
    scheduler, server, clock, alarm, connect = setup()
    await scheduler.begin(server)
    assert server.state == "reconnecting"
    waits = []
    for attempt, ceiling in enumerate(POLICY.ceilings(), start=1):
        wait = planned_wait(server, clock)
        assert 0 <= wait <= ceiling, (attempt, wait)
        assert alarm.at_ms == int(server.recovery.next_at * 1000)  # armed for the plan
        waits.append(wait)
        ring(clock, alarm)
        await scheduler.on_alarm()
        assert connect.attempts == attempt and server.recovery.attempts == attempt
    assert server.state == "failed" and alarm.at_ms is None and connect.attempts == 3
    # Drawn, not fixed: no two waits alike, and not the ceilings.
    assert len(set(waits)) == 3 and waits != POLICY.ceilings()


async def test_an_alarm_that_rings_too_early_runs_nothing() -> None:
    scheduler, server, clock, alarm, connect = setup(at_ceiling)
    await scheduler.begin(server)
    assert seconds_ahead(alarm, clock) == 1
    clock.advance(1 - 2 * DUE_MARGIN_SECONDS)
    await scheduler.on_alarm()
    assert connect.attempts == 0 and alarm.at_ms == START_MS + 1000
    clock.advance(2 * DUE_MARGIN_SECONDS)
    await scheduler.on_alarm()
    assert connect.attempts == 1 and seconds_ahead(alarm, clock) == 2


async def test_the_same_seed_plans_the_same_retries_and_another_seed_other_ones() -> None:
    plans = []
    for seed in (SEED, SEED, SEED + 1):
        scheduler, server, clock, alarm, _connect = setup(random.Random(seed).uniform)
        await scheduler.begin(server)
        plan = [planned_wait(server, clock)]
        for _ in range(POLICY.attempts - 1):
            ring(clock, alarm)
            await scheduler.on_alarm()
            plan.append(planned_wait(server, clock))
        plans.append(plan)
    assert plans[0] == plans[1] and plans[0] != plans[2]


async def test_half_open_waits_for_the_cool_down_and_restarts_it_on_failure() -> None:
    scheduler, server, clock, _alarm, connect = setup()
    scheduler.policy = POLICY.model_copy(update={"attempts": 0})
    await scheduler.begin(server)
    assert server.state == "failed"
    clock.advance(59)
    await scheduler.probe_half_open()
    assert connect.attempts == 0
    clock.advance(1)
    await scheduler.probe_half_open()
    assert connect.attempts == 1 and server.state == "failed"
    clock.advance(59)
    await scheduler.probe_half_open()  # the failed probe started the cool-down again
    assert connect.attempts == 1
    connect.up = True
    clock.advance(1)
    await scheduler.probe_half_open()
    assert server.state == "ready" and server.recovery.failed_at is None


async def test_a_ready_or_replaced_server_gets_no_recovery() -> None:
    scheduler, server, _clock, alarm, connect = setup()
    connect.up = True
    await connect(server)
    await scheduler.begin(server)
    assert server.state == "ready" and alarm.history == []
    server.lost("connection closed")
    server.retired = True
    await scheduler.begin(server)
    assert server.recovery.next_at is None and alarm.history == []


async def test_while_watched_the_alarm_makes_the_half_open_try_after_the_cool_down() -> None:
    watchers = Watchers(watching=True)
    scheduler, server, clock, alarm, connect = setup(hub=watchers)
    scheduler.policy = POLICY.model_copy(update={"attempts": 0})
    await scheduler.begin(server)
    # The cool-down is not jittered: it counts from the (jittered) failure.
    assert server.state == "failed" and seconds_ahead(alarm, clock) == 60
    clock.advance(60)
    await scheduler.on_alarm()  # the try fails: the cool-down starts again, re-armed
    assert connect.attempts == 1 and server.state == "failed"
    assert seconds_ahead(alarm, clock) == 60
    connect.up = True  # the server came back
    clock.advance(60)
    await scheduler.on_alarm()  # within one cool-down of coming back, without a message
    assert server.state == "ready" and alarm.at_ms is None
    # Nobody watching: a failed server plans no alarm (an abandoned client's object
    # is not woken once per cool-down for ever); the next message still tries.
    watchers.watching = False
    connect.up = False
    server.lost("connection closed")
    await scheduler.begin(server)
    assert server.state == "failed" and alarm.at_ms is None
    clock.advance(60)
    await scheduler.on_alarm()
    assert connect.attempts == 2  # nothing tried
    connect.up = True
    await scheduler.probe_half_open()
    assert server.state == "ready" and connect.attempts == 3


async def test_an_attempt_that_died_goes_on_along_the_schedule() -> None:
    scheduler, server, clock, alarm, connect = setup()
    await scheduler.crashed(server)  # the first attempt died: the cycle begins
    assert server.state == "reconnecting" and 0 <= planned_wait(server, clock) <= 1
    ring(clock, alarm)
    server.recovery.next_at = None  # its retry was running ...
    await scheduler.crashed(server)  # ... and died: counted as failed, the next planned
    assert server.recovery.attempts == 1 and 0 <= planned_wait(server, clock) <= 2
    planned = alarm.at_ms
    await scheduler.crashed(server)  # died after planning: the plan stands
    assert server.recovery.attempts == 1 and alarm.at_ms == planned
    server.recovery.give_up(POLICY, clock.now_ms() / 1000)
    server.retry_failed()
    assert server.state == "failed"
    clock.advance(60)
    await scheduler.crashed(server)  # a half-open try died: the cool-down starts again
    assert server.state == "failed" and server.recovery.failed_at == clock.now_ms() / 1000
    assert connect.attempts == 0


async def test_a_retry_that_raises_on_the_alarm_counts_as_failed_and_the_alarm_stays_set() -> None:
    scheduler, server, clock, alarm, connect = setup()

    async def broken(_server: McpServer) -> bool:
        raise KeyError("a defect")

    await scheduler.begin(server)
    server.script = broken
    ring(clock, alarm)
    await scheduler.on_alarm()  # does not raise into the platform's alarm handler
    assert server.state == "reconnecting" and server.recovery.attempts == 1
    assert server.last_error == "internal error (KeyError: 'a defect')"
    # The next retry is planned and armed.
    assert 0 <= planned_wait(server, clock) <= 2 and alarm.at_ms is not None
    server.script = connect
    connect.up = True
    ring(clock, alarm)
    await scheduler.on_alarm()
    assert server.state == "ready" and alarm.at_ms is None
