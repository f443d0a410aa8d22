"""The alarm port (albert.mcp.alarm_port.AlarmPort) and waitUntil on both runtimes.

Contract: one alarm per object, in Unix milliseconds as an int; unset reads as
None; setting again replaces it; deleting cancels it; at the time set the
platform calls the object's `alarm` handler once and then the alarm reads None.
"""

from __future__ import annotations

import asyncio
import time

from albert.cloudflare.context import WaitUntil
from albert.cloudflare.storage_alarm import WorkersAlarm
from tests.cloudflare.platform import Platform

WAIT_SECONDS = 3.0


async def _until(condition, timeout: float = WAIT_SECONDS) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


def _in(seconds: float) -> int:
    return int(time.time() * 1000 + seconds * 1000)


async def test_unset_alarm_reads_none_and_a_set_one_reads_back_as_int(platform: Platform) -> None:
    alarms = WorkersAlarm(platform.ctx.storage)
    assert await alarms.get_alarm() is None
    when = _in(3600)
    await alarms.set_alarm(when)
    got = await alarms.get_alarm()
    assert got == when and type(got) is int
    await alarms.delete_alarm()
    assert await alarms.get_alarm() is None


async def test_setting_again_replaces_the_alarm(platform: Platform) -> None:
    alarms = WorkersAlarm(platform.ctx.storage)
    await alarms.set_alarm(_in(3600))
    soon = _in(0.1)
    await alarms.set_alarm(soon)
    assert await alarms.get_alarm() == soon
    assert await _until(lambda: len(platform.alarms_fired) >= 1)
    await asyncio.sleep(0.2)
    assert len(platform.alarms_fired) == 1


async def test_the_handler_runs_once_and_the_alarm_is_cleared(platform: Platform) -> None:
    alarms = WorkersAlarm(platform.ctx.storage)
    await alarms.set_alarm(_in(0.05))
    assert await _until(lambda: len(platform.alarms_fired) == 1)
    for _ in range(50):
        if await alarms.get_alarm() is None:
            break
        await asyncio.sleep(0.02)
    assert await alarms.get_alarm() is None
    assert len(platform.alarms_fired) == 1


async def test_a_deleted_alarm_never_fires(platform: Platform) -> None:
    alarms = WorkersAlarm(platform.ctx.storage)
    await alarms.set_alarm(_in(0.1))
    await alarms.delete_alarm()
    await asyncio.sleep(0.3)
    assert platform.alarms_fired == []


async def test_wait_until_runs_the_work_to_completion(platform: Platform) -> None:
    done: list[str] = []

    async def work() -> None:
        await asyncio.sleep(0.01)
        done.append("flushed")

    defer = WaitUntil(platform.ctx)
    task = defer(work())
    await asyncio.wait_for(task, WAIT_SECONDS)
    assert done == ["flushed"]


async def test_wait_until_keeps_the_object_alive_until_the_work_is_done(
    platform: Platform,
) -> None:
    # On Pyodide a task handed over as a borrowed proxy is destroyed when waitUntil
    # returns, before the runtime calls its `then`: the platform then holds a
    # rejected promise instead of the work.
    release = asyncio.Event()

    async def work() -> str:
        await release.wait()
        return "flushed"

    defer = WaitUntil(platform.ctx)
    task = defer(work())
    await asyncio.sleep(0.05)
    [kept] = platform.kept_alive()
    assert not kept.done(), "the platform let go of the work before it finished"
    release.set()
    await asyncio.wait_for(asyncio.shield(kept), WAIT_SECONDS)
    assert task.result() == "flushed"


async def test_wait_until_keeps_failed_work_to_itself(platform: Platform) -> None:
    async def work() -> None:
        raise RuntimeError("analytics sink down")

    defer = WaitUntil(platform.ctx)
    task = defer(work())
    await asyncio.wait([task], timeout=WAIT_SECONDS)
    assert isinstance(task.exception(), RuntimeError)
    # Each platform settles what it kept alive (rejected on Cloudflare, logged locally).
    [kept] = platform.kept_alive()
    await asyncio.wait([kept], timeout=WAIT_SECONDS)
    assert kept.done()
