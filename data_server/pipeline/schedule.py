"""Scheduled runs: a cron expression (croniter, UTC) and a bounded, stoppable loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

from croniter import croniter
from pydantic import BaseModel, Field, field_validator

T = TypeVar("T")


class ScheduleSettings(BaseModel):
    """When the pipeline runs: a 5-field cron expression (or 6 with seconds), in UTC."""

    cron: str = Field("0 */6 * * *", description="Cron expression, evaluated in UTC")
    run_at_start: bool = Field(False, description="Run once immediately before the first tick")
    max_runs: int | None = Field(None, ge=1, description="Stop after this many runs")

    @field_validator("cron")
    @classmethod
    def _valid(cls, value: str) -> str:
        if not croniter.is_valid(value):
            raise ValueError(f"not a valid cron expression: {value!r}")
        return value


def next_fire(cron: str, after: datetime) -> datetime:
    """The first time strictly after ``after`` that the expression matches (UTC)."""
    return croniter(cron, after.astimezone(UTC)).get_next(datetime)


# Where `longest_gap_seconds` starts counting ticks, and how many it looks at: a fixed
# start, so one expression always gets one answer; enough ticks for a year of most
# expressions (weekdays only, twice a day, the first of the month).
_GAPS_FROM = datetime(2024, 1, 1, tzinfo=UTC)
_GAPS_TICKS = 64


@functools.lru_cache(maxsize=32)
def longest_gap_seconds(cron: str) -> float:
    """The longest wait between two consecutive ticks of the expression (UTC), over its
    first ticks from a fixed date: 21,600 s for every 6 hours, 259,200 s over a weekend
    for weekdays only."""
    ticks = croniter(cron, _GAPS_FROM)
    previous = ticks.get_next(datetime)
    longest = 0.0
    for _ in range(_GAPS_TICKS):
        current = ticks.get_next(datetime)
        longest = max(longest, (current - previous).total_seconds())
        previous = current
    return longest


def _utcnow() -> datetime:
    return datetime.now(UTC)


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep up to ``seconds``; return True at once if ``stop`` gets set meanwhile."""
    if seconds <= 0:
        return stop.is_set()
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True


async def schedule(
    job: Callable[[], Awaitable[T]],
    settings: ScheduleSettings,
    stop: asyncio.Event,
    *,
    now: Callable[[], datetime] = _utcnow,
    wait: Callable[[asyncio.Event, float], Awaitable[bool]] = wait_or_stop,
    on_result: Callable[[datetime, T | BaseException], None] | None = None,
) -> int:
    """Run ``job`` at each cron tick until ``stop`` is set or ``max_runs`` is reached.

    A job that raises does not end the loop: the error goes to ``on_result`` and the next
    tick comes as planned. ``now`` and ``wait`` are the clock and the stoppable sleep
    (replaceable in tests). Returns the number of runs made.
    """
    runs = 0
    first = settings.run_at_start

    def done() -> bool:
        return stop.is_set() or (settings.max_runs is not None and runs >= settings.max_runs)

    while not done():
        current = now()
        fire_at = current if first else next_fire(settings.cron, current)
        first = False
        if await wait(stop, (fire_at - current).total_seconds()):
            break
        outcome: T | BaseException
        try:
            outcome = await job()
        except Exception as exc:  # keep the schedule alive; the caller sees the error
            outcome = exc
        runs += 1
        if on_result is not None:
            on_result(fire_at, outcome)
    return runs
