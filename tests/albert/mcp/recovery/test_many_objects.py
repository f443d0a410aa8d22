"""Many objects losing the same server at the same moment (a restart of either side) retry
it spread over time, not in lockstep.

200 objects, each with its own recovery scheduler, alarm and server state (the real
scheduling code), on one manual clock, all start their recovery cycle at the same instant;
the server stays down. The alarms are rung in time order until every cycle is spent.
Without jitter all 200 retried at 1, 3, 7, 15 and 31 s and went `failed` together.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from albert.mcp.configs import McpServerConfig
from albert.mcp.recovery_policy import RecoveryPolicy, Uniform
from albert.mcp.recovery_scheduler import RecoveryScheduler
from albert.mcp.server import McpServer
from albert.settings import Settings
from tests.albert.mcp.recovery.scripted import RecordingAlarm, ScriptedServer, site_for
from tests.albert.mcp.recovery.test_scheduler import at_ceiling
from tests.support.clock import ManualClock

OBJECTS = 200
SEED = 1729
START_MS = 1_700_000_000_000
POLICY = RecoveryPolicy.from_settings(Settings())  # 1, 2, 4, 8, 16 s ceilings, 5 retries
# The window over which a server sees attempts arrive together.
WINDOW_SECONDS = 0.1


@dataclass
class DownServer:
    """The server every object tries: down, noting when each attempt reached it."""

    clock: ManualClock
    attempts: list[float] = field(default_factory=list)
    first: dict[int, float] = field(default_factory=dict)  # each object's first retry

    async def connect(self, server: McpServer) -> bool:
        at = (self.clock.now_ms() - START_MS) / 1000
        self.attempts.append(at)
        self.first.setdefault(id(server), at)
        server.connect_failed("connection refused")
        return False


@dataclass
class ChatObject:
    server: McpServer
    alarm: RecordingAlarm
    scheduler: RecoveryScheduler


async def run_storm(uniform: Uniform) -> tuple[DownServer, list[ChatObject]]:
    """Every object loses the server at START_MS; ring the alarms until all are spent."""
    clock = ManualClock(START_MS)
    down = DownServer(clock)
    objects = []
    for _ in range(OBJECTS):
        servers: dict[str, McpServer] = {}
        alarm = RecordingAlarm()
        scheduler = RecoveryScheduler(
            servers, policy=POLICY, alarms=alarm, clock=clock, uniform=uniform
        )
        config = McpServerConfig(name="vaults", url="http://v/mcp")
        site = site_for(scheduler, servers, clock)
        server = servers["vaults"] = ScriptedServer(config, site, down.connect)
        objects.append(ChatObject(server, alarm, scheduler))
    for chat in objects:
        chat.server.connect_failed("connection refused")  # the first attempt, at once
        await chat.scheduler.begin(chat.server)
    for _ in range(OBJECTS * (POLICY.attempts + 1)):
        armed = [c for c in objects if c.alarm.at_ms is not None]
        if not armed:
            break
        clock.ms = min(c.alarm.at_ms for c in armed if c.alarm.at_ms is not None)
        for chat in armed:
            if chat.alarm.at_ms is not None and chat.alarm.at_ms <= clock.ms:
                await chat.scheduler.on_alarm()
    return down, objects


def busiest_window(times: list[float]) -> int:
    """The most attempts that reached the server within one WINDOW_SECONDS window."""
    ordered = sorted(times)
    most, start = 0, 0
    for end, at in enumerate(ordered):
        while at - ordered[start] >= WINDOW_SECONDS:
            start += 1
        most = max(most, end - start + 1)
    return most


async def test_200_objects_dropped_at_once_retry_spread_out_and_give_up_apart() -> None:
    down, objects = await run_storm(random.Random(SEED).uniform)

    # Every object made its five retries and is failed: jitter changes when, not how many.
    assert len(down.attempts) == OBJECTS * POLICY.attempts
    assert all(c.server.state == "failed" for c in objects)
    # The first retries come over the whole first second, a tenth of them or so per
    # 100 ms; in lockstep all 200 came in the same millisecond.
    first = list(down.first.values())
    assert len(first) == OBJECTS
    assert all(0 <= at <= POLICY.ceiling(1) for at in first)
    buckets = Counter(int(at / WINDOW_SECONDS) for at in first)
    assert max(buckets.values()) <= 0.2 * OBJECTS, buckets
    # Over the whole cycle the server never sees more than a small share at once.
    assert busiest_window(down.attempts) <= 0.25 * OBJECTS
    # They give up apart: no second of the cycle holds more than a modest share.
    failed = [c.server.recovery.failed_at for c in objects]
    assert None not in failed
    by_second = Counter(int(at - START_MS / 1000) for at in failed if at is not None)
    assert max(by_second.values()) <= 0.15 * OBJECTS, by_second
    # Each object's waits stayed under their ceilings: the cycle ends by the sum of them.
    assert max(a for a in down.attempts) <= sum(POLICY.ceilings())


async def test_without_jitter_the_same_storm_is_in_lockstep() -> None:
    # The measure above tells the two apart: with every wait at its ceiling (the old
    # fixed schedule) each retry of all 200 objects reaches the server at once.
    down, objects = await run_storm(at_ceiling)
    assert busiest_window(down.attempts) == OBJECTS
    assert sorted(set(down.attempts)) == [1.0, 3.0, 7.0, 15.0, 31.0]
    assert len({c.server.recovery.failed_at for c in objects}) == 1
