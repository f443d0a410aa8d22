"""The cron schedule loop: bounded by max_runs, stoppable, surviving a failing job."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from data_server.pipeline import ScheduleSettings, next_fire, schedule
from data_server.pipeline.schedule import longest_gap_seconds


class FakeClock:
    """A clock that jumps forward by exactly the time the loop asks to wait."""

    def __init__(self, start: datetime) -> None:
        self.current = start
        self.waits: list[float] = []

    def now(self) -> datetime:
        return self.current

    async def wait(self, stop: asyncio.Event, seconds: float) -> bool:
        self.waits.append(seconds)
        self.current += timedelta(seconds=max(seconds, 0))
        return stop.is_set()


async def test_runs_on_each_cron_tick_until_max_runs() -> None:
    clock = FakeClock(datetime(2026, 1, 1, 10, 2, 30, tzinfo=UTC))
    fired: list[datetime] = []
    calls = 0

    async def job() -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("source down")
        return calls

    outcomes: list[object] = []
    runs = await schedule(
        job,
        ScheduleSettings(cron="*/5 * * * *", max_runs=3),
        asyncio.Event(),
        now=clock.now,
        wait=clock.wait,
        on_result=lambda at, outcome: (fired.append(at), outcomes.append(outcome)),
    )
    assert runs == 3 == calls
    assert [f.strftime("%H:%M") for f in fired] == ["10:05", "10:10", "10:15"]
    assert clock.waits[0] == 150.0
    assert isinstance(outcomes[1], RuntimeError) and outcomes[2] == 3


async def test_run_at_start_fires_immediately() -> None:
    clock = FakeClock(datetime(2026, 1, 1, 10, 2, tzinfo=UTC))
    fired: list[datetime] = []

    async def job() -> None:
        return None

    await schedule(
        job,
        ScheduleSettings(cron="0 * * * *", run_at_start=True, max_runs=2),
        asyncio.Event(),
        now=clock.now,
        wait=clock.wait,
        on_result=lambda at, _: fired.append(at),
    )
    assert [f.strftime("%H:%M") for f in fired] == ["10:02", "11:00"]


async def test_stop_ends_a_real_wait_promptly() -> None:
    stop = asyncio.Event()
    calls = 0

    async def job() -> None:
        nonlocal calls
        calls += 1

    loop = asyncio.get_running_loop()
    loop.call_later(0.1, stop.set)
    started = time.monotonic()
    runs = await asyncio.wait_for(
        schedule(job, ScheduleSettings(cron="0 0 1 1 *"), stop), timeout=5
    )
    assert runs == 0 == calls
    assert time.monotonic() - started < 2


def test_cron_is_validated_and_next_fire_is_utc() -> None:
    with pytest.raises(ValidationError):
        ScheduleSettings(cron="every tuesday")
    at = next_fire("30 6 * * *", datetime(2026, 3, 1, 7, 0, tzinfo=UTC))
    assert at == datetime(2026, 3, 2, 6, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("cron", "hours"),
    [
        ("0 */6 * * *", 6),
        ("*/15 * * * *", 0.25),
        ("0 2,14 * * *", 12),
        ("30 3 * * *", 24),
        ("0 9 * * 1-5", 72),  # Friday 9:00 to Monday 9:00
        ("0 0 * * 0", 168),
    ],
)
def test_the_longest_gap_between_two_ticks(cron: str, hours: float) -> None:
    assert longest_gap_seconds(cron) == hours * 3600
