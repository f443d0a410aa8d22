"""The loop's worker threads: work runs as on asyncio's own pool, and a stop never waits
on a thread that is stuck (a DNS lookup waiting out its timeout)."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError

import pytest

from miniflare.threads import LoopThreads


def test_work_runs_and_threads_are_reused_up_to_the_limit() -> None:
    pool = LoopThreads(max_workers=2)
    try:
        results = list(pool.map(lambda n: n * n, range(50)))
        assert results == [n * n for n in range(50)]
        assert len(pool._workers) <= 2
        failing = pool.submit(int, "not a number")
        with pytest.raises(ValueError):
            failing.result(timeout=5)
    finally:
        pool.shutdown()


def test_shutdown_drops_queued_work_and_does_not_wait_for_a_stuck_thread() -> None:
    release = threading.Event()
    pool = LoopThreads(max_workers=1, join_seconds=0.1)
    try:
        stuck = pool.submit(release.wait, 30)
        queued = [pool.submit(time.sleep, 5) for _ in range(20)]
        started = time.monotonic()
        pool.shutdown(wait=True, cancel_futures=True)
        assert time.monotonic() - started < 1.0
        assert all(f.cancelled() for f in queued)
        assert not stuck.done()
        with pytest.raises(RuntimeError):
            pool.submit(time.sleep, 0)
        pool.shutdown(wait=True, cancel_futures=True)  # a second shutdown is harmless
        assert pool._workers[0].daemon  # left to the exit, never joined by it
    finally:
        release.set()
    assert stuck.result(timeout=5) is True
    pool._workers[0].join(5)
    assert not pool._workers[0].is_alive()  # the stop sentinel still reached it


def test_asyncio_run_ends_at_once_with_a_thread_still_busy() -> None:
    release = threading.Event()

    async def main() -> str:
        loop = asyncio.get_running_loop()
        pool = LoopThreads(join_seconds=0.1)
        loop.set_default_executor(pool)
        assert await asyncio.to_thread(lambda: "ran") == "ran"
        # A lookup that will not end soon, as one waiting out a resolver's timeout.
        loop.run_in_executor(None, release.wait, 30)
        return "done"

    started = time.monotonic()
    try:
        assert asyncio.run(main()) == "done"
        # asyncio's own pool would have held this for the whole 30 s.
        assert time.monotonic() - started < 2.0
    finally:
        release.set()


def test_a_cancelled_call_is_never_run() -> None:
    release = threading.Event()
    ran: list[int] = []
    pool = LoopThreads(max_workers=1)
    try:
        pool.submit(release.wait, 5)
        later = pool.submit(ran.append, 1)
        assert later.cancel()
        release.set()
        with pytest.raises(CancelledError):
            later.result(timeout=5)
        pool.submit(ran.append, 2).result(timeout=5)
        assert ran == [2]
    finally:
        release.set()
        pool.shutdown()
