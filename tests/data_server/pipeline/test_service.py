"""The pipeline inside the server: what /healthz says of the last run, and a locked run."""

from __future__ import annotations

import logging
import time

import pytest

from data_server.pipeline.service import pipeline_health, run_locked
from data_server.settings import DataServerSettings
from data_server.store import VaultStore
from tests.data_server.conftest import StoreFactory

SETTINGS = DataServerSettings(
    PIPELINE_CRON="0 */6 * * *", STALE_AFTER_SECONDS=3600, PIPELINE_OFFLINE=True
)


def test_the_last_run_its_age_and_staleness(store: VaultStore) -> None:
    never = pipeline_health(SETTINGS, store)
    assert never == {"scheduled": "0 */6 * * *", "stale_after_seconds": 3600,
                     "last_run": None, "age_seconds": None, "stale": True}  # fmt: skip
    run_id = store.start_run()
    store.finish_run(run_id, "ok")
    fresh = pipeline_health(SETTINGS, store)
    assert fresh["last_run"]["id"] == run_id and fresh["last_run"]["status"] == "ok"
    assert fresh["age_seconds"] <= 5 and fresh["stale"] is False
    store._write("UPDATE runs SET finished_at = ? WHERE id = ?", (time.time() - 7200, run_id))
    old = pipeline_health(SETTINGS, store)
    assert old["age_seconds"] >= 7200 - 5 and old["stale"] is True


async def test_a_locked_run_runs_once_and_a_busy_one_not_at_all(
    new_store: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="data_server")
    first, second = new_store(), new_store()
    report = await run_locked(SETTINGS, first, None)
    assert report is not None and all(source.ok for source in report.run.sources)
    with first.pipeline_lock() as held:
        assert held
        assert await run_locked(SETTINGS, second, None) is None
    assert [run.id for run in second.runs()] == [report.run.id]
    # Each run says when it starts and how it ended (partial: no index to publish to), a
    # replica that skips a tick says why.
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (logging.INFO, f"pipeline run {report.run.id} started") in lines
    assert any(
        level == logging.INFO
        and m.startswith(f"pipeline run {report.run.id}: partial in ")
        and m.endswith("publish: no index configured")
        for level, m in lines
    )
    assert (logging.INFO, "pipeline run skipped: another run holds the run lock") in lines


def test_without_a_set_bound_staleness_follows_the_schedule(store: VaultStore) -> None:
    every_hour = DataServerSettings(PIPELINE_CRON="0 * * * *", PIPELINE_OFFLINE=True)
    assert pipeline_health(every_hour, store)["stale_after_seconds"] == 9000  # 2.5 ticks
    run_id = store.start_run()
    store.finish_run(run_id, "ok")
    # Two hours without a run is one missed tick: not yet stale; three hours is.
    store._write("UPDATE runs SET finished_at = ? WHERE id = ?", (time.time() - 7200, run_id))
    assert pipeline_health(every_hour, store)["stale"] is False
    store._write("UPDATE runs SET finished_at = ? WHERE id = ?", (time.time() - 10800, run_id))
    assert pipeline_health(every_hour, store)["stale"] is True
