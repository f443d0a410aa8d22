"""The pipeline inside the data server: scheduled runs, one at a time across replicas.

`albert-data serve` with ``PIPELINE_CRON`` set runs the pipeline at each tick; every replica
ticks, and the store's run lock (an advisory lock in PostgreSQL, a lock file beside a
SQLite database) lets one of them run while the others skip that tick. `albert-data run`
takes the same lock. `/healthz` reports the last run from the store's run log, which all
replicas share.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

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
from data_server.store import VaultStore

log = logging.getLogger(__name__)

# How long a stopping server waits for a run in progress before cancelling it (a
# cancelled run is logged as failed and leaves the index as it was).
STOP_GRACE_SECONDS = 10.0


async def run_locked(
    settings: DataServerSettings,
    store: VaultStore,
    client: TypesenseClient | None,
    *,
    http: httpx.AsyncClient | None = None,
) -> PipelineReport | None:
    """One pipeline run if no other run (in any replica) is under way; None if one is."""
    with store.pipeline_lock() as acquired:
        if not acquired:
            return None
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
    ended = run.finished_at or run.started_at
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
        self._task = asyncio.create_task(
            schedule(self._tick, config, self._stop, on_result=self._report)
        )

    async def _tick(self) -> PipelineReport | None:
        report = await run_locked(self.settings, self.store, self.client)
        if report is None:
            self.skipped += 1
        else:
            self.runs += 1
        return report

    def _report(self, fired: Any, outcome: PipelineReport | BaseException | None) -> None:
        if isinstance(outcome, BaseException):
            log.error("scheduled pipeline run failed: %s", outcome)
        elif outcome is None:
            log.info("scheduled pipeline run skipped: another replica is running one")
        else:
            log.info(
                "scheduled pipeline run %s: %s (%d documents sent, %d deleted)",
                outcome.run.id,
                outcome.run.status,
                outcome.upserted,
                outcome.deleted,
            )

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
