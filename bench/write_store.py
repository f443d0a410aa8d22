"""The write store: the pipeline's ingest into PostgreSQL against SQLite, in one run, and a
second run over the same recordings, which must publish nothing.

Both backends get the same scaled recordings (`bench.data_server.scaled_handler`: the
recorded pools, copied with varied ids up to 20,000 vaults), a fresh store and a fresh
collection on one Typesense. PostgreSQL is a throwaway server (`PostgresProcess`) on this
machine, with fsync off: SQLite's WAL with `synchronous=NORMAL` does not sync each commit
either. The search p50 over the index stays in `bench.data_server`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx

from albert.search.typesense_client import TypesenseClient
from bench.core import BenchSizes, Row, Spread, Stopwatch, ratio
from bench.data_server import API_KEY, scaled_handler
from bench.stack import state_dir
from data_server.fixtures import encode_recordings, offline_transport
from data_server.pipeline import PipelineReport, offline_processors, run_pipeline
from data_server.store import open_store
from data_server.store.pg_process import PostgresProcess
from data_server.typesense.process import TypesenseProcess

# PostgreSQL may take this much longer than SQLite for the same ingest.
PG_RATIO_TARGET = 2.0


@dataclass
class Runs:
    """One backend: the first ingest and the unchanged second run."""

    first_s: float
    second_s: float
    first: PipelineReport
    second: PipelineReport


async def _ingest_twice(url: str, index: TypesenseClient, collection: str, extra: int) -> Runs:
    with open_store(url) as store:
        async with httpx.AsyncClient(transport=offline_transport(scaled_handler(extra))) as http:
            watch = Stopwatch()
            first = await run_pipeline(
                offline_processors(), store, index, http=http, collection=collection
            )
            first_s = watch.ms / 1000
            watch = Stopwatch()
            second = await run_pipeline(
                offline_processors(), store, index, http=http, collection=collection
            )
            second_s = watch.ms / 1000
    for report in (first, second):
        if report.run.publication is None or report.publish_error:
            raise RuntimeError(f"publish failed: {report.publish_error}")
    return Runs(first_s, second_s, first, second)


async def _recorded_count() -> int:
    """Vaults the recordings alone make (every source), as the scaling starts from them."""
    with open_store("sqlite:///:memory:") as store:
        async with httpx.AsyncClient(transport=offline_transport()) as http:
            await run_pipeline(offline_processors(), store, None, http=http)
        return store.counts().vaults


async def run(sizes: BenchSizes) -> list[Row]:
    """Ingest into SQLite, then into PostgreSQL, each twice."""
    target = sizes.pick(6_000, 20_000)
    recorded = await _recorded_count()
    # Invalid recorded rows stay invalid in every copy; a little extra covers them.
    extra = int((target - recorded) * 1.003)
    encode_recordings()
    rounds = sizes.pick(1, 3)
    sqlite_runs: list[Runs] = []
    pg_runs: list[Runs] = []
    with state_dir("write_store") as state:
        typesense = TypesenseProcess(Path(state) / "typesense", api_key=API_KEY)
        postgres = PostgresProcess()
        try:
            typesense.start(timeout=60)
            postgres.start(timeout=60)
            async with TypesenseClient(typesense.url, API_KEY) as index:
                # Alternating, so a busy moment of the machine falls on both alike.
                for attempt in range(rounds):
                    url = f"sqlite:///{Path(state) / f'store-{attempt}.db'}"
                    sqlite_runs.append(
                        await _ingest_twice(url, index, f"vaults_sqlite_{attempt}", extra)
                    )
                    pg_url = postgres.create_database(f"bench_{attempt}")
                    pg_runs.append(
                        await _ingest_twice(pg_url, index, f"vaults_postgres_{attempt}", extra)
                    )
        finally:
            postgres.stop()
            typesense.stop()
    pg, sqlite = pg_runs[-1], sqlite_runs[-1]
    count = pg.first.run.publication.count if pg.first.run.publication else 0
    pg_first = Spread.of([r.first_s for r in pg_runs])
    sqlite_first = Spread.of([r.first_s for r in sqlite_runs])
    rows = [
        Row(
            bench="write_store",
            metric=f"pipeline ingest of {count:,} vaults into PostgreSQL",
            unit="s",
            figure=pg_first,
            baseline=sqlite_first,
            baseline_label="the same run into SQLite",
            ratio=ratio(pg_first, sqlite_first),
            target=f"≤ {PG_RATIO_TARGET:g}× SQLite",
            met=pg_first.median <= PG_RATIO_TARGET * sqlite_first.median,
            note=(
                f"{rounds} rounds, each into a new database and collection; "
                f"{pg.first.upserted:,} documents sent (SQLite {sqlite.first.upserted:,})"
            ),
        ),
    ]
    for name, runs in (("PostgreSQL", pg_runs), ("SQLite", sqlite_runs)):
        sent = [float(r.second.upserted + r.second.deleted) for r in runs]
        second = Spread.of([r.second_s for r in runs])
        rows.append(
            Row(
                bench="write_store",
                metric=f"unchanged second run, {name}: documents published",
                unit="docs",
                figure=Spread.of(sent),
                target="0",
                met=max(sent) == 0 and all(r.second.incremental for r in runs),
                note=f"the run took {second.median:.2f} s [{second.min:.2f}–{second.max:.2f}]",
            )
        )
    return rows
