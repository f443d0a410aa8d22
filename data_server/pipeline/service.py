"""The pipeline inside the data server: scheduled runs, one at a time across replicas.

`albert-data serve` with ``PIPELINE_CRON`` set runs the pipeline at each tick; every replica
ticks, and the store's run lock (a lease in PostgreSQL, a lock file beside a SQLite
database) lets one of them run while the others skip that tick. `albert-data run` takes
the same lock. A run whose lease is lost midway is stopped. `/healthz` reports the last
run from the store's run log, which all replicas share.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from albert.search.typesense_client import TypesenseClient
from data_server.pipeline.run import (
    PipelineReport,
    default_processors,
    offline_http,
    offline_processors,
    run_pipeline,
)
from data_server.pipeline.schedule import ScheduleSettings, schedule
from data_server.settings import DataServerSettings
from data_server.store import PipelineLock, PipelineLockLost, VaultStore
from data_server.store.calls import in_thread
from data_server.store.run_lock import fenced_by

log = logging.getLogger(__name__)

T = TypeVar("T")

# How long a stopping server waits for a run in progress before cancelling it (a
# cancelled run is logged as failed and leaves the index as it was).
STOP_GRACE_SECONDS = 10.0
# Taking and giving back the run lock: a connection and a statement or two. Past this, the
# store is taken as not answering (a lock taken after all is given back at once).
LOCK_CALL_SECONDS = 30.0


def _give_back(lock: PipelineLock) -> None:
    lock.release()


async def run_with_lock(store: VaultStore, job: Callable[[], Awaitable[T]]) -> T | None:
    """`job()` while this caller holds the store's pipeline lock; None, logged as skipped,
    while another run (a replica, `albert-data run`) holds it.

    A lock lost midway (a PostgreSQL lease that could not be renewed, or was taken over)
    cancels the job and raises PipelineLockLost: the run must not go on beside another.
    Giving the lock back never fails the run: a lease that cannot be given back lapses.
    """
    lock = await in_thread(
        store.acquire_pipeline_lock, within=LOCK_CALL_SECONDS, if_abandoned=_give_back
    )
    if not lock:
        log.info("pipeline run skipped: another run holds the run lock")
        return None
    loop = asyncio.get_running_loop()

    async def fenced() -> T:
        with fenced_by(lock):
            return await job()

    task = asyncio.ensure_future(fenced())

    def stop(reason: str) -> None:
        loop.call_soon_threadsafe(task.cancel)

    lock.on_lost(stop)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if lock.lost_reason is not None and (current is None or not current.cancelling()):
            raise PipelineLockLost(f"pipeline run stopped: {lock.lost_reason}") from None
        raise
    finally:
        try:
            await in_thread(lock.release, within=LOCK_CALL_SECONDS)
        except TimeoutError:
            log.warning("pipeline run lock not given back within %g s", LOCK_CALL_SECONDS)


async def run_locked(
    settings: DataServerSettings,
    store: VaultStore,
    client: TypesenseClient | None,
    *,
    http: httpx.AsyncClient | None = None,
) -> PipelineReport | None:
    """One pipeline run if no other run (in any replica) is under way; None if one is."""

    async def job() -> PipelineReport:
        sources = offline_processors() if settings.pipeline_offline else default_processors()
        own_http = http is None and settings.pipeline_offline
        fetcher = offline_http() if own_http else http
        try:
            return await run_pipeline(
                sources, store, client, http=fetcher, collection=settings.vaults_collection
            )
        finally:
            if own_http and fetcher is not None:
                await fetcher.aclose()

    return await run_with_lock(store, job)


async def close_abandoned_runs(store: VaultStore) -> int:
    """Close the runs a killed run left `running` (as `abandoned`), unless a live run
    holds the lock; how many. A failure is logged, not raised: the next run closes them."""
    try:
        return await in_thread(store.close_abandoned_runs, within=LOCK_CALL_SECONDS)
    except Exception as exc:
        log.warning("runs left running were not checked: %s", exc or type(exc).__name__)
        return 0


def pipeline_health(settings: DataServerSettings, store: VaultStore) -> dict[str, Any]:
    """The last run of the store's log: when, how it ended, how old, and whether stale."""
    runs = store.runs(limit=1)
    report: dict[str, Any] = {
        "scheduled": settings.pipeline_cron or None,
        "stale_after_seconds": round(settings.stale_after()),
    }
    if not runs:
        report.update(last_run=None, age_seconds=None, stale=True)
        return report
    run = runs[0]
    # An abandoned run was closed when a later one found it, not when it last did anything.
    ended = run.started_at if run.status == "abandoned" else run.finished_at or run.started_at
    age = max(time.time() - ended, 0.0)
    report.update(
        last_run={
            "id": run.id,
            "status": run.status,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
        },
        age_seconds=round(age),
        stale=age > settings.stale_after(),
    )
    return report


class PipelineScheduler:
    """Runs the pipeline on `settings.pipeline_cron` until stopped (the server's lifespan)."""

    def __init__(
        self, settings: DataServerSettings, store: VaultStore, client: TypesenseClient
    ) -> None:
        self.settings = settings
        self.store = store
        self.client = client
        self.runs = 0
        self.skipped = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[int] | None = None

    def start(self) -> None:
        """Begin ticking in a task of its own."""
        config = ScheduleSettings(
            cron=self.settings.pipeline_cron, run_at_start=self.settings.pipeline_run_at_start
        )
        self._task = asyncio.create_task(self._run(config))

    async def _run(self, config: ScheduleSettings) -> int:
        # A replica killed mid-run left its run `running`: closed before the first tick.
        await close_abandoned_runs(self.store)
        return await schedule(self._tick, config, self._stop, on_result=self._report)

    async def _tick(self) -> PipelineReport | None:
        report = await run_locked(self.settings, self.store, self.client)
        if report is None:
            self.skipped += 1
        else:
            self.runs += 1
        return report

    def _report(self, fired: Any, outcome: PipelineReport | BaseException | None) -> None:
        # A run logs its own start and end, a skipped tick says so (run_with_lock).
        if isinstance(outcome, BaseException):
            log.error("scheduled pipeline run failed: %s", outcome or type(outcome).__name__)

    async def stop(self) -> None:
        """Stop ticking; a run in progress gets `STOP_GRACE_SECONDS`, then is cancelled."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=STOP_GRACE_SECONDS)
        if not done:
            task.cancel()
            await asyncio.wait({task})
