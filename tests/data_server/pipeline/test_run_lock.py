"""The pipeline's run lock under faults, on a real PostgreSQL (and SQLite where it applies):
a dropped lease session, a lease taken over, a server frozen mid-run, a run killed midway,
and the log lines of every run."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from albert.search.typesense_client import TypesenseClient
from data_server.fixtures import fixture_handler
from data_server.pipeline.service import close_abandoned_runs, run_locked
from data_server.settings import DatabaseLimits, DataServerSettings
from data_server.store import PipelineLockLost, RunRecord, VaultStore, open_store
from data_server.store.pg_process import PostgresProcess
from data_server.store.postgres import LEASE_APPLICATION_NAME
from data_server.store.run_lock import fenced_by
from tests.data_server.conftest import StoreFactory
from tests.support.postgres_faults import frozen, session_pids, terminate_sessions

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = DataServerSettings(PIPELINE_OFFLINE=True)
# Renewed every 2 s, given up after 6 s without a renewal (room for a loaded machine).
LIMITS = DatabaseLimits(
    pipeline_lease_seconds=12, connect_timeout_seconds=2, statement_timeout_seconds=5
)
WITHIN = 60.0  # generous bound on anything the tests wait for


@pytest.fixture
def pg_url(postgres_database: Callable[[], str]) -> str:
    return postgres_database()


@contextmanager
def _stores(url: str, count: int) -> Iterator[list[VaultStore]]:
    """`count` stores of one database, as replicas would open it."""
    stores: list[VaultStore] = []
    try:
        for _ in range(count):
            stores.append(open_store(url, limits=LIMITS))
        yield stores
    finally:
        for store in stores:
            store.close()


def _slow_http(seconds: float) -> httpx.AsyncClient:
    """The recordings, with Beefy answering after `seconds`: a run that takes a while."""

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.beefy.finance":
            await asyncio.sleep(seconds)
        return fixture_handler(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WITHIN
    while not check():
        assert time.monotonic() < deadline, f"not within {WITHIN} s: {what}"
        await asyncio.sleep(0.05)


def _by_id(store: VaultStore) -> dict[str, RunRecord]:
    return {run.id: run for run in store.runs()}


async def test_a_dropped_lease_session_neither_stops_the_run_nor_lets_another_start(
    pg_url: str, index_client: TypesenseClient, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="data_server")
    settings = SETTINGS.model_copy(update={"vaults_collection": collection})
    with _stores(pg_url, 2) as (first, second):
        async with _slow_http(8.0) as slow:
            running = asyncio.ensure_future(run_locked(settings, first, index_client, http=slow))
            await _until(lambda: bool(session_pids(pg_url, LEASE_APPLICATION_NAME)), "lease")
            dropped = set(session_pids(pg_url, LEASE_APPLICATION_NAME))
            # An idle timeout, a failover, a NAT entry forgotten: the session is gone.
            assert terminate_sessions(pg_url, LEASE_APPLICATION_NAME) == 1
            # The next renewal finds it gone and renews on a new session.
            await _until(
                lambda: bool(set(session_pids(pg_url, LEASE_APPLICATION_NAME)) - dropped),
                "the lease renewed on a new session",
            )
            skipped = 0
            after = None
            while not running.done():
                after = await run_locked(settings, second, index_client)
                if after is not None:
                    break  # the first run ended meanwhile: no overlap, checked below
                skipped += 1
                await asyncio.sleep(0.3)
            report = await running
        assert report is not None and report.run.status == "ok", report
        assert skipped >= 1
        assert "pipeline run lock lost" not in caplog.text, caplog.text
        assert "not given back" not in caplog.text, caplog.text

        if after is None:
            after = await run_locked(settings, second, index_client)
        assert after is not None and after.run.status == "ok"
        runs = _by_id(second)
        one, two = runs[report.run.id], runs[after.run.id]
        assert (one.status, two.status) == ("ok", "ok")
        assert one.finished_at is not None and one.finished_at <= two.started_at

    messages = [r.getMessage() for r in caplog.records]
    assert f"pipeline run {report.run.id} started" in messages
    assert any(m.startswith(f"pipeline run {report.run.id}: ok in ") for m in messages)
    assert "pipeline run skipped: another run holds the run lock" in messages


async def test_a_run_whose_lease_is_taken_over_stops_and_the_next_closes_it(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    caplog.set_level(logging.INFO, logger="data_server")
    with _stores(pg_url, 2) as (first, second):
        async with _slow_http(30.0) as slow:
            running = asyncio.ensure_future(run_locked(SETTINGS, first, None, http=slow))
            await _until(lambda: any(r.status == "running" for r in first.runs()), "run")
            (stopped,) = [r.id for r in first.runs() if r.status == "running"]
            # What a replica does once a lease has lapsed: takes it.
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute(
                    "UPDATE pipeline_lease SET holder = 'another replica', token = token + 1,"
                    " expires_at = EXTRACT(EPOCH FROM clock_timestamp()) + 60"
                )
            started = time.monotonic()
            with pytest.raises(PipelineLockLost, match="another run took it"):
                await asyncio.wait_for(running, WITHIN)
            assert time.monotonic() - started < 15
        # Nothing more was written for it: not even its own end (the lease is not its own).
        assert first.get_run(stopped).status == "running"  # type: ignore[union-attr]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("UPDATE pipeline_lease SET holder = NULL, expires_at = 0")
        after = await run_locked(SETTINGS, second, None)
        assert after is not None and all(source.ok for source in after.run.sources)
        assert second.get_run(stopped).status == "abandoned"  # type: ignore[union-attr]
    assert "pipeline run lock lost: the lease lapsed or another run took it" in caplog.text
    assert f"closed as abandoned: {stopped}" in caplog.text


async def test_a_run_on_a_frozen_postgres_stops_before_its_lease_can_lapse(
    postgres_server: PostgresProcess, pg_url: str
) -> None:
    with _stores(pg_url, 2) as (first, second):
        async with _slow_http(60.0) as slow:
            running = asyncio.ensure_future(run_locked(SETTINGS, first, None, http=slow))
            await _until(lambda: any(r.status == "running" for r in first.runs()), "run")
            (stopped,) = [r.id for r in first.runs()]
            lag = 0.0
            with frozen(postgres_server):
                started = time.monotonic()
                while not running.done():
                    assert time.monotonic() - started < WITHIN, "the run went on, frozen"
                    tick = time.monotonic()
                    await asyncio.sleep(0.1)
                    lag = max(lag, time.monotonic() - tick - 0.1)
                took = time.monotonic() - started
            with pytest.raises(PipelineLockLost, match="could not be renewed"):
                running.result()
        # Given up 6 s after the last renewal; closing the run and giving the lease back
        # are bounded too (both fail here), and the event loop never waited on them.
        assert took < 40 and lag < 1.0, (took, lag)
        deadline = time.monotonic() + WITHIN
        while (after := await run_locked(SETTINGS, second, None)) is None:
            assert time.monotonic() < deadline, "the stopped run's lease never lapsed"
            await asyncio.sleep(0.5)
        assert all(source.ok for source in after.run.sources)
        # Closed by its own run after SIGCONT, or found by the next one.
        assert second.get_run(stopped).status in ("failed", "abandoned")  # type: ignore[union-attr]


def test_a_write_after_the_lease_is_lost_is_refused(pg_url: str) -> None:
    import psycopg

    with _stores(pg_url, 1) as (store,), store.pipeline_lock() as held, fenced_by(held):
        assert held
        run_id = store.start_run()
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("UPDATE pipeline_lease SET expires_at = 0")
        with pytest.raises(PipelineLockLost):
            store.finish_run(run_id, "ok")
        assert store.get_run(run_id).status == "running"  # type: ignore[union-attr]


def test_the_lease_is_given_back_on_a_new_session_when_its_own_was_dropped(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with _stores(pg_url, 2) as (first, second):
        lock = first.acquire_pipeline_lock()
        assert lock
        assert terminate_sessions(pg_url, LEASE_APPLICATION_NAME) == 1
        lock.release()  # must not raise
        with second.pipeline_lock() as other:
            assert other
    assert "not given back" not in caplog.text


# A pipeline run in a process of its own, taking the lock and stuck in its fetch until
# killed; its run is `running` in the log from the start.
_CHILD = """
import asyncio, sys
import httpx
from data_server.fixtures import fixture_handler
from data_server.pipeline.run import offline_processors, run_pipeline
from data_server.pipeline.service import run_with_lock
from data_server.settings import DatabaseLimits
from data_server.store import open_store

async def stuck(request):
    await asyncio.sleep(3600)
    return fixture_handler(request)

async def main():
    store = open_store(sys.argv[1], limits=DatabaseLimits(pipeline_lease_seconds=3))
    http = httpx.AsyncClient(transport=httpx.MockTransport(stuck))
    await run_with_lock(store, lambda: run_pipeline(offline_processors(), store, None, http=http))

asyncio.run(main())
"""


async def test_a_run_killed_midway_is_closed_as_abandoned_by_the_next_run(
    store_url: str, new_store: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    store = new_store()
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    child = subprocess.Popen(  # noqa: ASYNC220 (started once, killed below)
        [sys.executable, "-c", _CHILD, store_url], cwd=ROOT, env=env
    )
    try:
        await _until(
            lambda: child.poll() is None and any(r.status == "running" for r in store.runs()),
            "the child's run",
        )
        (killed,) = [r.id for r in store.runs()]
    finally:
        child.kill()
        child.wait(timeout=WITHIN)
    # SQLite: the kernel dropped the lock file's lock with the process. PostgreSQL: the
    # lease lapses within its 3 s; until then, runs are skipped.
    deadline = time.monotonic() + WITHIN
    while (report := await run_locked(SETTINGS, store, None)) is None:
        assert time.monotonic() < deadline, "the killed run's lock was never freed"
        await asyncio.sleep(0.5)
    assert all(source.ok for source in report.run.sources)
    runs = _by_id(store)
    assert runs[killed].status == "abandoned" and runs[killed].finished_at is not None
    assert f"closed as abandoned: {killed}" in caplog.text


async def test_abandoned_runs_are_closed_at_start_unless_a_live_run_holds_the_lock(
    new_store: StoreFactory,
) -> None:
    first, second = new_store(), new_store()
    with first.pipeline_lock() as held:
        assert held
        live = first.start_run()
        assert await close_abandoned_runs(second) == 0
        assert second.get_run(live).status == "running"  # type: ignore[union-attr]
    # The lock is free: nothing runs it any more.
    assert await close_abandoned_runs(second) == 1
    assert second.get_run(live).status == "abandoned"  # type: ignore[union-attr]
