"""Data server: pipeline ingest of 20,000 vaults, and vault search over them through the
MCP tool and straight from Typesense.

The MCP side is the worker's own client (`albert.mcp.connection.McpConnection`, the real
`mcp` SDK over streamable HTTP): one long-lived session and one HTTP client for all calls,
as a Durable Object keeps them, so a call costs what a tool call of the worker costs.

The 20,000 records are the recorded DefiLlama, Beefy and Yearn responses, with the
DefiLlama /pools rows repeated under new pool ids and with TVL and APY varied, so every
record keeps the exact shape the real API sends. The ingest baseline is the same pipeline
on the recordings as they are.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from albert.mcp.connection import McpConnection
from albert.search.typesense_client import UNCOMPRESSED, TypesenseClient
from bench.core import BenchSizes, Row, Spread, Stopwatch, cpu_seconds, percentile, ratio
from bench.stack import state_dir
from child_processes import ChildProcess, answers_http
from data_server.fixtures import encode_recordings, fixture_handler, load, offline_transport
from data_server.mcp_server.vault_index import search_params
from data_server.pipeline import offline_processors, run_pipeline
from data_server.settings import DataServerSettings
from data_server.store import VaultStore
from data_server.typesense.process import TypesenseProcess, free_port

PROJECT_DIR = Path(__file__).resolve().parent.parent
API_KEY = "bench-typesense-key"
SEARCH_TARGET_MS = 5.0
# Through the SDK's public API on both sides (the ratio to the bare query is reported).
MCP_SEARCH_TARGET_MS = 10.0
INGEST_TARGET_S = 3.0
# Ingest rounds (quick, full): the figure is their median, each round from a fresh state.
INGEST_ROUNDS = (2, 3)
CAMEL = "defillama/pools_camel_30_2025-12-24_timwf.json"
SNAKE = "defillama/pools_enriched_snake_2025-08-31_PaulApivat.json"

# What a model asks the vault search for, in rotation.
QUERIES: list[dict[str, Any]] = [
    {"query": "usdc", "chain": "base"},
    {"chain": "ethereum", "min_tvl_usd": 1_000_000, "sort_by": "apy"},
    {"query": "eth", "min_apy": 3, "per_page": 10},
    {"stablecoin_only": True, "max_risk_rating": "medium", "sort_by": "tvl_usd"},
    {"protocol": "aave-v3", "chains": ["ethereum", "arbitrum"]},
]


def _vary(row: dict[str, Any], copy: int) -> dict[str, Any]:
    """A recorded /pools row as another pool: new id, TVL and APY moved a little."""
    out = dict(row)
    key = "poolId" if "poolId" in row else "pool"
    out[key] = f"{row[key]}-b{copy}"
    scale = 1 + ((copy * 37) % 41 - 20) / 100
    for name in ("tvlUsd", "tvl_usd", "apy", "apyBase", "apy_base"):
        if isinstance(out.get(name), int | float):
            out[name] = out[name] * scale
    return out


def scaled_handler(extra_rows: int) -> Any:
    """The recordings, with `extra_rows` more DefiLlama /pools rows made from recorded ones."""
    recorded = [*load(CAMEL)["pools"], *load(SNAKE)]
    extra = [
        _vary(row, copy)
        for copy, row in itertools.islice(
            ((c, r) for c in itertools.count(1) for r in recorded), extra_rows
        )
    ]

    # The fake API's own work (decoding the recording, adding rows, encoding 19 MB) is done
    # here, before the stopwatch: a real server does it on its side, and the pipeline
    # still receives and decodes exactly these bytes.
    encode_recordings()
    recorded_pools = fixture_handler(httpx.Request("GET", "https://yields.llama.fi/pools"))
    body = json.loads(recorded_pools.content)
    body["data"].extend(extra)
    pools = httpx.Response(200, json=body)
    headers = {
        "content-type": pools.headers["content-type"],
        "date": recorded_pools.headers["date"],
    }

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "yields.llama.fi" and request.url.path == "/pools":
            return httpx.Response(200, content=pools.content, headers=headers)
        return fixture_handler(request)

    return handler


@dataclass
class Ingested:
    """One timed pipeline run, and the CPU each process spent in it."""

    seconds: float
    count: int
    pipeline_cpu_s: float
    typesense_cpu_s: float


async def ingest(
    store_path: Path, index: TypesenseClient, collection: str, extra_rows: int, typesense_pid: int
) -> Ingested:
    """One pipeline run into a fresh store and collection."""
    with VaultStore(store_path) as store:
        async with httpx.AsyncClient(
            transport=offline_transport(scaled_handler(extra_rows))
        ) as http:
            cpu, typesense_cpu = time.process_time(), cpu_seconds(typesense_pid)
            watch = Stopwatch()
            report = await run_pipeline(
                offline_processors(), store, index, http=http, collection=collection
            )
            seconds = watch.ms / 1000
            cpu, typesense_cpu = (
                time.process_time() - cpu,
                cpu_seconds(typesense_pid) - typesense_cpu,
            )
    if report.run.publication is None or report.publish_error:
        raise RuntimeError(f"publish failed: {report.publish_error}")
    return Ingested(seconds, report.run.publication.count, cpu, typesense_cpu)


@dataclass
class Served:
    """A running data server: its MCP URL and process id."""

    mcp_url: str
    pid: int


@contextmanager
def data_server(typesense: TypesenseProcess, collection: str, db: Path) -> Iterator[Served]:
    """`albert-data serve` as a process."""
    port = free_port()
    env = {
        "PYTHONPATH": f"{PROJECT_DIR}:{PROJECT_DIR / 'src'}",
        "TYPESENSE_URL": typesense.url,
        "TYPESENSE_API_KEY": API_KEY,
        "TYPESENSE_VAULTS_COLLECTION": collection,
        "DATA_SERVER_DB_PATH": str(db),
    }
    child = ChildProcess(
        [sys.executable, "-m", "data_server.cli", "serve", "--port", str(port)],
        name="albert-data serve",
        env=env,
        grace=10.0,
    ).start()
    try:
        # /readyz, not /healthz: the health check compares the whole store with the index.
        child.wait_ready(
            answers_http(f"http://127.0.0.1:{port}/readyz", healthy_only=True),
            60,
            "serving",
            port=port,  # another server that took the port in the meantime does not count
        )
        assert child.pid is not None
        yield Served(f"http://127.0.0.1:{port}/mcp", child.pid)
    finally:
        child.stop()


@dataclass
class Searched:
    """Latencies of both paths, and CPU per call of every process on them (ms)."""

    via_mcp: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)
    engine: list[float] = field(default_factory=list)
    found: int = 0
    client_cpu_ms: float = 0.0
    direct_cpu_ms: float = 0.0
    server_cpu_ms: float = 0.0
    typesense_cpu_ms: float = 0.0


async def search(
    server: Served, typesense: TypesenseProcess, collection: str, repeats: int
) -> Searched:
    """Each query through the MCP tool, then the same compiled query straight to Typesense."""
    out = Searched()
    url = f"{typesense.url}/collections/{collection}/documents/search"
    connection = McpConnection(
        "vaults", server.mcp_url, {}, on_lost=lambda _: None, on_tools_changed=lambda: None
    )
    await connection.connect(within=30)
    try:
        # The headers of the data server's own request (its `TypesenseClient`, set up by
        # `create_app` from the server's environment), so the bare query is the same request.
        headers = {"X-TYPESENSE-API-KEY": API_KEY}
        if not DataServerSettings.from_env(os.environ).typesense_compressed:
            headers.update(UNCOMPRESSED)
        async with httpx.AsyncClient(headers=headers) as http:
            await connection.list_tools(within=30)  # as the worker does before its first call
            server_cpu = typesense_cpu = 0.0
            for index in range(repeats + len(QUERIES)):
                if index == len(QUERIES):  # after the warm-up: one of each
                    server_cpu = cpu_seconds(server.pid)
                    typesense_cpu = cpu_seconds(typesense.pid)
                args = QUERIES[index % len(QUERIES)]
                cpu, watch = time.process_time(), Stopwatch()
                result = await connection.call_tool("search_vaults", args)
                mcp_ms, mcp_cpu = watch.ms, time.process_time() - cpu
                if result.is_error or result.structured is None:
                    raise RuntimeError(f"search_vaults failed: {result.texts}")
                compiled = result.structured
                # The query the tool sent, compiled by the product's own code.
                params = search_params(
                    q=args.get("query"),
                    filter_by=compiled.get("filter_by") or "",
                    sort_by=compiled.get("sort_by"),
                    per_page=args.get("per_page", 10),
                ).to_query()
                cpu, watch = time.process_time(), Stopwatch()
                response = await http.get(url, params=params)
                direct_ms, direct_cpu = watch.ms, time.process_time() - cpu
                response.raise_for_status()
                answer = response.json()
                if answer["found"] != compiled["found"]:
                    raise RuntimeError("the direct query does not match the tool's")
                if index < len(QUERIES):
                    continue
                out.found += int(compiled["found"])
                out.via_mcp.append(mcp_ms)
                out.direct.append(direct_ms)
                out.engine.append(float(answer.get("search_time_ms", 0)))
                out.client_cpu_ms += mcp_cpu * 1000
                out.direct_cpu_ms += direct_cpu * 1000
            calls = len(out.via_mcp)
            out.server_cpu_ms = (cpu_seconds(server.pid) - server_cpu) * 1000 / calls
            # Both paths query Typesense once per round: its CPU per query.
            out.typesense_cpu_ms = (cpu_seconds(typesense.pid) - typesense_cpu) * 500 / calls
            out.client_cpu_ms /= calls
            out.direct_cpu_ms /= calls
    finally:
        await connection.close()
    return out


@dataclass
class IngestRuns:
    """The baseline ingests (the recordings as they are) and the scaled ones, one of each
    per round."""

    base: list[Ingested]
    scaled: list[Ingested]


@asynccontextmanager
async def ingest_rounds(
    state: Path, target_vaults: int, rounds: int
) -> AsyncIterator[tuple[IngestRuns, TypesenseProcess]]:
    """`rounds` times: a Typesense on a new data folder, the recorded ingest, then the
    scaled one, each into a new store file; every round does the first one's work.

    Yields the runs with the last round's Typesense still running, its `vaults` collection
    and `scaled.db` store being what the search half is measured on.
    """
    runs = IngestRuns([], [])
    typesense: TypesenseProcess | None = None
    try:
        for attempt in range(rounds):
            if typesense is not None:
                typesense.stop()
                shutil.rmtree(state / f"round-{attempt - 1}", ignore_errors=True)
            folder = state / f"round-{attempt}"
            typesense = TypesenseProcess(folder / "typesense", api_key=API_KEY)
            typesense.start(timeout=60)
            assert typesense.pid is not None
            async with TypesenseClient(typesense.url, API_KEY) as index:
                base = await ingest(folder / "recorded.db", index, "recorded", 0, typesense.pid)
                # Invalid recorded rows stay invalid in every copy; a little extra covers them.
                extra = int((target_vaults - base.count) * 1.003)
                scaled = await ingest(folder / "scaled.db", index, "vaults", extra, typesense.pid)
            runs.base.append(base)
            runs.scaled.append(scaled)
        assert typesense is not None
        yield runs, typesense
    finally:
        if typesense is not None:
            typesense.stop()


def ingest_row(runs: IngestRuns) -> Row:
    """The ingest figure (median over the rounds) against the recorded one (likewise)."""
    base, scaled = runs.base, runs.scaled
    figure = Spread.of([s.seconds for s in scaled])
    baseline = Spread.of([b.seconds for b in base])
    pipeline_cpu = Spread.of([s.pipeline_cpu_s for s in scaled])
    typesense_cpu = Spread.of([s.typesense_cpu_s for s in scaled])
    return Row(
        bench="data_server",
        metric=f"pipeline ingest of {scaled[-1].count:,} vaults (fetch, store, publish)",
        unit="s",
        figure=figure,
        baseline=baseline,
        baseline_label=f"same pipeline, {base[-1].count:,} recorded vaults",
        ratio=ratio(figure, baseline),
        target=f"≤ {INGEST_TARGET_S:g} s",
        met=figure.median <= INGEST_TARGET_S,
        note=(
            f"{len(scaled)} rounds, each from a fresh store and Typesense; CPU per run "
            f"(median [min–max]): pipeline process {_cpu(pipeline_cpu)}, "
            f"Typesense {_cpu(typesense_cpu)}"
        ),
    )


def _cpu(spread: Spread) -> str:
    return f"{spread.median:.2f} s [{spread.min:.2f}–{spread.max:.2f}]"


async def run(sizes: BenchSizes) -> list[Row]:
    """Ingest (scaled and recorded), then search over the scaled index."""
    target_vaults = sizes.pick(6_000, 20_000)
    repeats = sizes.pick(30, 300)
    with state_dir("data") as state:
        rounds = sizes.pick(*INGEST_ROUNDS)
        async with ingest_rounds(state, target_vaults, rounds) as (runs, typesense):
            store = typesense.data_dir.parent / "scaled.db"  # the last round's
            with data_server(typesense, "vaults", store) as server:
                searched = await search(server, typesense, "vaults", repeats)
    via_mcp, direct = searched.via_mcp, searched.direct
    mcp_spread, direct_spread = Spread.of(via_mcp), Spread.of(direct)
    mcp_p50, direct_p50 = percentile(via_mcp, 50), percentile(direct, 50)
    hits = searched.found // len(via_mcp)
    count = runs.scaled[-1].count
    about = f"{len(QUERIES)} query shapes over {count:,} vaults, {hits:,} hits on average"
    return [
        ingest_row(runs),
        Row(
            bench="data_server",
            metric="vault search, Typesense HTTP API directly (p50)",
            unit="ms",
            figure=direct_spread,
            target=f"p50 ≤ {SEARCH_TARGET_MS:g} ms",
            met=direct_p50 <= SEARCH_TARGET_MS,
            note=(
                f"{about}; Typesense's own search_time_ms p50 {percentile(searched.engine, 50):g}"
            ),
        ),
        Row(
            bench="data_server",
            metric="vault search through MCP call_tool search_vaults (p50)",
            unit="ms",
            figure=mcp_spread,
            baseline=direct_spread,
            baseline_label="the same compiled query, bare Typesense",
            ratio=ratio(mcp_spread, direct_spread),
            target=f"p50 ≤ {MCP_SEARCH_TARGET_MS:g} ms",
            met=mcp_p50 <= MCP_SEARCH_TARGET_MS,
            note=(
                f"the worker's McpConnection, one session; p99 {percentile(via_mcp, 99):.1f} ms "
                f"vs {percentile(direct, 99):.1f} ms bare; CPU per call: worker client "
                f"{searched.client_cpu_ms:.2f} ms, data server {searched.server_cpu_ms:.2f} ms, "
                f"Typesense {searched.typesense_cpu_ms:.2f} ms per query; bare query client "
                f"{searched.direct_cpu_ms:.2f} ms"
            ),
        ),
    ]


async def _ingest_only(rounds: int, quick: bool) -> list[Row]:
    target_vaults = BenchSizes(quick=quick).pick(6_000, 20_000)
    with state_dir("data") as state:
        async with ingest_rounds(state, target_vaults, rounds) as (runs, _):
            pass
    for base, one in zip(runs.base, runs.scaled, strict=True):
        print(
            f"ingest {one.count:,} vaults: {one.seconds:.2f} s, CPU pipeline "
            f"{one.pipeline_cpu_s:.2f} s, Typesense {one.typesense_cpu_s:.2f} s "
            f"(recorded {base.count:,}: {base.seconds:.2f} s)"
        )
    return [ingest_row(runs)]


if __name__ == "__main__":
    # `python -m bench.data_server [--quick] [--repeat N]`: the ingest row alone (the same
    # rounds `--only data_server` times, without the search half; N rounds instead of
    # INGEST_ROUNDS), for profiling the pipeline;
    # `--search-only`: the two search rows of that same run.
    import argparse
    import asyncio

    parser = argparse.ArgumentParser(prog="python -m bench.data_server")
    parser.add_argument("--quick", action="store_true", help="the quick size (6,000 vaults)")
    parser.add_argument(
        "--repeat", type=int, default=None, help="rounds (fresh store and Typesense) to time"
    )
    parser.add_argument(
        "--search-only", action="store_true", help="the two vault search rows, as in a full run"
    )
    options = parser.parse_args()
    if options.search_only:
        from rich.console import Console

        from bench.__main__ import render

        searched_rows = asyncio.run(run(BenchSizes(quick=options.quick)))[1:]
        render(searched_rows, [], Console(width=max(Console().width, 150)))
        raise SystemExit(0)
    rounds = options.repeat or BenchSizes(quick=options.quick).pick(*INGEST_ROUNDS)
    for row in asyncio.run(_ingest_only(max(rounds, 1), options.quick)):
        print(
            f"{row.metric}: {row.figure.median:.2f} s [{row.figure.min:.2f}–{row.figure.max:.2f}]"
            f" (baseline {row.baseline.median if row.baseline else 0:.2f} s); {row.note}"
        )
