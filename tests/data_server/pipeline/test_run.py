"""The pipeline end to end: recordings → processors → SQLite → the real Typesense."""

from __future__ import annotations

import json
import sqlite3
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from albert.search.typesense_client import SearchParams, TypesenseClient
from data_server.fixtures import csv_pool_rows, fixture_handler, load, recorded_pool_ids
from data_server.pipeline import (
    NullProgress,
    RichProgress,
    check,
    offline_processors,
    run_pipeline,
)
from data_server.pipeline.run import FIRST_SLICE
from data_server.processors import BeefyProcessor, DefiLlamaProcessor, YearnProcessor
from data_server.processors.base import chain_slug
from data_server.store import VaultStore
from data_server.store.sqlite import WAL_SIZE_LIMIT
from data_server.vaults.index import record_document, with_display
from tests.typesense_fixture import TypesenseServer

from .conftest import http_client

CAMEL = "defillama/pools_camel_30_2025-12-24_timwf.json"


def _subset() -> list:
    """DefiLlama (no charts) and Yearn on Base: small, two sources, real data."""
    return [DefiLlamaProcessor(chart_pools=[]), YearnProcessor(chains=(8453,))]


def _expected_count() -> int:
    return len(recorded_pool_ids()) + len(load("yearn/vaults_8453.json")["vaults"])


def top_tvl_ids() -> set[str]:
    return {r["poolId"] for r in csv_pool_rows()}


def _with_changed_pool(pool_id: str, apy_delta: float):
    """A handler serving /pools with one recorded pool's APY changed (a later snapshot)."""

    def handler(request: httpx.Request) -> httpx.Response:
        response = fixture_handler(request)
        if request.url.host == "yields.llama.fi" and request.url.path == "/pools":
            body = json.loads(response.content)
            for row in body["data"]:
                if row.get("poolId") == pool_id:
                    row["apy"] += apy_delta
            return httpx.Response(200, json=body, headers={"date": response.headers["date"]})
        return response

    return handler


async def test_run_twice_is_idempotent_and_updates_values(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    async with http_client() as http:
        first = await run_pipeline(_subset(), store, index_client, http=http, collection=collection)
    assert first.ok, first
    expected = _expected_count()
    assert store.counts().vaults == expected
    info = await index_client.retrieve_collection(collection)
    assert info.num_documents == expected
    assert first.run.publication is not None and first.run.publication.count == expected
    assert {s.source: s.inserted for s in first.run.sources} == {
        "defillama": expected - len(load("yearn/vaults_8453.json")["vaults"]),
        "yearn": len(load("yearn/vaults_8453.json")["vaults"]),
    }

    # A pool only this recording lists: its row is the one the vault is made of.
    row = next(r for r in load(CAMEL)["pools"] if r["poolId"] not in top_tvl_ids())
    vid = f"defillama:{chain_slug(row['chain'])}:{row['poolId']}"
    async with http_client(_with_changed_pool(row["poolId"], 1.25)) as http:
        second = await run_pipeline(
            _subset(), store, index_client, http=http, collection=collection
        )
    assert second.ok
    by_source = {s.source: s for s in second.run.sources}
    assert (by_source["defillama"].inserted, by_source["defillama"].updated) == (0, 1)
    assert (by_source["yearn"].inserted, by_source["yearn"].updated) == (0, 0)
    # No duplicates anywhere, and the new value reached both stores.
    assert store.counts().vaults == expected
    assert (await index_client.retrieve_collection(collection)).num_documents == expected
    stored = store.get_vault(vid)
    assert stored is not None and abs(stored.apy - (row["apy"] + 1.25)) < 1e-9
    doc = await index_client.get_document(collection, vid)
    assert abs(doc["apy"] - (row["apy"] + 1.25)) < 1e-4
    assert (await check(store, index_client, collection=collection)).ok
    assert [r.id for r in store.runs()] == [second.run.id, first.run.id]


async def test_a_failing_source_is_logged_and_the_others_are_published(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    def beefy_down(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.beefy.finance":
            return httpx.Response(500, text="internal error")
        return fixture_handler(request)

    sources = [*_subset(), BeefyProcessor()]
    async with http_client(beefy_down) as http:
        report = await run_pipeline(sources, store, index_client, http=http, collection=collection)
    assert report.run.status == "partial"
    by_source = {s.source: s for s in report.run.sources}
    assert by_source["beefy"].ok is False
    assert "500" in (by_source["beefy"].error or "")
    assert by_source["defillama"].ok and by_source["yearn"].ok
    # The log in the database says the same as the returned report.
    logged = store.get_run(report.run.id)
    assert logged is not None and logged.sources == report.run.sources
    assert store.counts().by_source.keys() == {"defillama", "yearn"}
    assert report.run.publication is not None
    assert (await index_client.retrieve_collection(collection)).num_documents == _expected_count()
    facets = await index_client.search(
        collection, SearchParams(q="*", facet_by="source", per_page=0)
    )
    assert {c["value"] for c in facets.facet_counts[0]["counts"]} == {"defillama", "yearn"}


async def test_a_source_answering_html_fails_with_the_url_named(store: VaultStore) -> None:
    def yearn_html(request: httpx.Request) -> httpx.Response:
        if request.url.host == "raw.githubusercontent.com":
            return httpx.Response(200, text="<html>rate limited</html>")
        return fixture_handler(request)

    async with http_client(yearn_html) as http:
        report = await run_pipeline(_subset(), store, None, http=http)
    by_source = {s.source: s for s in report.run.sources}
    assert by_source["defillama"].ok
    error = by_source["yearn"].error or ""
    assert "ValueError: invalid JSON from https://raw.githubusercontent.com/yearn/" in error
    assert store.counts().by_source.keys() == {"defillama"}


async def test_no_source_succeeding_fails_the_run_without_publishing(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    def all_down(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503)

    async with http_client(all_down) as http:
        report = await run_pipeline(
            _subset(), store, index_client, http=http, collection=collection
        )
    assert report.run.status == "failed"
    assert report.run.publication is None
    assert report.publish_error == "no source succeeded"
    assert all(not s.ok for s in report.run.sources)


async def test_rich_progress_reports_each_step(store: VaultStore) -> None:
    out = StringIO()
    progress = RichProgress(Console(file=out, width=120, force_terminal=False))
    async with http_client() as http:
        report = await run_pipeline(_subset(), store, None, progress, http=http)
    assert not progress._progress.live.is_started  # finish() stopped the display
    text = out.getvalue()
    assert "defillama:" in text and "yearn:" in text
    assert "publish skipped" in text
    assert report.run.status == "partial" and report.publish_error == "no index configured"


async def test_a_crash_mid_run_is_logged_as_failed(store: VaultStore) -> None:
    class BrokenProgress(NullProgress):
        def step(self, description: str) -> None:
            raise RuntimeError("terminal went away")

    async with http_client() as http:
        with pytest.raises(RuntimeError, match="terminal went away"):
            await run_pipeline(_subset(), store, None, BrokenProgress(), http=http)
    (run,) = store.runs()
    assert run.status == "failed" and run.finished_at is not None


async def test_a_sources_warnings_say_what_they_were_not_just_how_many(store: VaultStore) -> None:
    """The local stack's `beefy: … 3 warnings` line: which parts were missing, and why."""
    out = StringIO()
    progress = RichProgress(Console(file=out, width=400, force_terminal=False))
    async with http_client() as http:
        report = await run_pipeline([BeefyProcessor()], store, None, progress, http=http)
    [beefy] = report.run.sources
    assert len(beefy.warnings) == 3  # /apy/breakdown, /apy and /tvl have no recording
    line = next(line for line in out.getvalue().splitlines() if line.startswith("beefy:"))
    # Not a fault: the offline recordings have none of those.
    assert line.endswith(
        "history points, no recording for apy_breakdown, apy, tvl "
        "(the offline demo goes without them)"
    ), line


def test_warning_summaries_group_labels_by_reason() -> None:
    from data_server.pipeline.run import NOT_RECORDED, summarize_warnings

    assert summarize_warnings([]) == "0 warnings"
    assert summarize_warnings(["duplicate vault v1, first kept"]) == (
        "1 warning (duplicate vault v1, first kept)"
    )
    many = [f"vault config {n}: ValidationError" for n in range(5)]
    kinds = ["a: x", "b: y", "c: z"]
    assert summarize_warnings(many + kinds) == (
        "8 warnings (vault config 0, vault config 1, vault config 2 and 2 more: "
        "ValidationError; a: x; b: y; 1 more kind)"
    )
    unrecorded = [f"{part}: {NOT_RECORDED}" for part in ("apy", "tvl")]
    assert summarize_warnings(unrecorded) == (
        "no recording for apy, tvl (the offline demo goes without them)"
    )
    assert summarize_warnings(["a: x", *unrecorded]) == (
        "1 warning (a: x); no recording for apy, tvl (the offline demo goes without them)"
    )


# -- slices: what a fault midway leaves in the store and the index ------------------------


class _FaultyStore(VaultStore):
    """A write store whose n-th vault write from now raises a fault (before writing)."""

    fail_on: int = 0
    fault: BaseException | None = None

    def arm(self, fail_on: int, fault: BaseException) -> _FaultyStore:
        self.writes, self.fail_on, self.fault = 0, fail_on, fault
        return self

    def upsert_vaults(self, vaults: Any, **options: Any) -> Any:
        self.writes = getattr(self, "writes", 0) + 1
        if self.fault is not None and self.writes == self.fail_on:
            raise self.fault
        return super().upsert_vaults(vaults, **options)


class _CountingStore(VaultStore):
    """A write store that records how many vaults each of its transactions wrote."""

    def upsert_vaults(self, vaults: Any, **options: Any) -> Any:
        self.sizes = [*getattr(self, "sizes", []), len(vaults)]
        return super().upsert_vaults(vaults, **options)


async def test_a_large_source_writes_a_small_first_slice_then_whole_ones(tmp_path: Path) -> None:
    # Typesense has nothing to index until the first slice is written: it is cut short.
    with _CountingStore(tmp_path / "s.db") as store:
        async with http_client() as http:
            report = await run_pipeline(
                [DefiLlamaProcessor(chart_pools=[])], store, None, http=http, slice_size=400
            )
        defillama = report.run.sources[0]
        assert defillama.ok
        sizes, stored = store.sizes, store.counts().by_source["defillama"]
    assert sizes[0] == FIRST_SLICE < 400
    assert set(sizes[1:-1]) == {400} and 0 < sizes[-1] <= 400
    assert sum(sizes) == defillama.vaults == stored


class _WalWatchingStore(VaultStore):
    """A store that notes the size of its WAL file when the run checkpoints it."""

    def checkpoint(self) -> None:
        self.wal_at_checkpoint = self.wal_size()
        super().checkpoint()

    def wal_size(self) -> int:
        return Path(f"{self.path}-wal").stat().st_size


async def test_the_runs_wal_is_cut_back_once_it_ends(tmp_path: Path) -> None:
    # The run defers checkpoints: its writes pile up in the WAL until its one checkpoint.
    with _WalWatchingStore(tmp_path / "s.db") as store:
        async with http_client() as http:
            report = await run_pipeline(offline_processors(), store, None, http=http)
        assert report.run.status == "partial"  # every source written; no index to publish to
        assert store.wal_at_checkpoint > WAL_SIZE_LIMIT
        assert store.wal_size() <= WAL_SIZE_LIMIT
        assert store.counts().vaults == sum(source.vaults for source in report.run.sources)


async def test_runs_that_never_publish_keep_no_replaced_rows(store: VaultStore) -> None:
    row = next(r for r in load(CAMEL)["pools"] if r["project"] == "falcon-finance")
    for delta in (0.0, 1.25, 2.5):
        async with http_client(_with_changed_pool(row["poolId"], delta)) as http:
            report = await run_pipeline(_subset(), store, None, http=http)
        assert report.run.status == "partial"
    changed = next(s for s in report.run.sources if s.source == "defillama")
    assert changed.updated == 1
    # No index was ever fed: nothing can show a replaced row, so none is kept.
    assert store._rows("SELECT COUNT(*) FROM superseded_records")[0][0] == 0


class _Crash(BaseException):
    """Stands for a crash: not an Exception, so nothing on the way catches it."""


async def _indexed(
    server: TypesenseServer, collection: str, store: VaultStore
) -> dict[str, dict[str, Any]]:
    """Every document of a collection, by id (Typesense's export endpoint), with the display
    fields its publish kept in the store."""
    async with httpx.AsyncClient(headers={"X-TYPESENSE-API-KEY": server.api_key}) as http:
        response = await http.get(f"{server.url}/collections/{collection}/documents/export")
    response.raise_for_status()
    docs = [json.loads(line) for line in response.text.splitlines() if line.strip()]
    return {doc["id"]: doc for doc in with_display(docs, store)}


def _stored_documents(store: VaultStore) -> dict[str, dict[str, Any]]:
    """The index document of every stored vault (without its publish_seq)."""
    return {vid: record_document(json.loads(rec)) for vid, rec in store.records(limit=10**6)}


def _without_seq(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without what says which publish and which row revision it is of."""
    return {k: v for k, v in doc.items() if k not in ("publish_seq", "revision")}


def _same_values(indexed: dict[str, Any], stored: dict[str, Any]) -> bool:
    # Typesense keeps `float` fields in single precision.
    if indexed.keys() != stored.keys():
        return False
    return all(
        v == stored[k] or (isinstance(v, float) and abs(v - stored[k]) <= 1e-6 * abs(v) + 1e-9)
        for k, v in indexed.items()
    )


async def test_a_store_write_failing_midway_fails_its_source_and_the_index_shows_the_store(
    tmp_path: Path,
    typesense_server: TypesenseServer,
    index_client: TypesenseClient,
    collection: str,
) -> None:
    # DefiLlama's third slice of 100 fails; the first two stay written and published.
    fault = sqlite3.OperationalError("disk I/O error")
    with _FaultyStore(tmp_path / "s.db").arm(3, fault) as store:
        async with http_client() as http:
            report = await run_pipeline(
                _subset(), store, index_client, http=http, collection=collection, slice_size=100
            )
        by_source = {s.source: s for s in report.run.sources}
        defillama = by_source["defillama"]
        assert not defillama.ok and defillama.error == "OperationalError: disk I/O error"
        assert (defillama.inserted, defillama.vaults) == (200, 200)
        assert by_source["yearn"].ok
        assert report.run.status == "partial"
        assert report.run.publication is not None and report.publish_error is None
        assert store.counts().by_source == {"defillama": 200, "yearn": by_source["yearn"].vaults}
        stored = _stored_documents(store)
        indexed = await _indexed(typesense_server, collection, store)
        assert indexed.keys() == stored.keys()
        assert all(_same_values(_without_seq(indexed[i]), stored[i]) for i in stored)
        assert (await check(store, index_client, collection=collection)).ok


async def test_a_crash_midway_leaves_the_index_with_committed_vaults_and_older_documents(
    tmp_path: Path,
    typesense_server: TypesenseServer,
    index_client: TypesenseClient,
    collection: str,
) -> None:
    # A first run publishes a later snapshot (every DefiLlama APY 1 point higher)...
    def shifted(request: httpx.Request) -> httpx.Response:
        response = fixture_handler(request)
        if request.url.host == "yields.llama.fi" and request.url.path == "/pools":
            body = json.loads(response.content)
            for row in body["data"]:
                if isinstance(row.get("apy"), int | float):
                    row["apy"] += 1.0
            return httpx.Response(200, json=body, headers={"date": response.headers["date"]})
        return response

    # ...then the second run crashes at its 40th DefiLlama slice (of 59).
    with _FaultyStore(tmp_path / "s.db") as store:
        async with http_client(shifted) as http:
            first = await run_pipeline(
                _subset(), store, index_client, http=http, collection=collection, slice_size=100
            )
        assert first.ok
        before = await _indexed(typesense_server, collection, store)
        store.arm(40, _Crash())
        async with http_client() as http:
            with pytest.raises(_Crash):
                await run_pipeline(
                    _subset(), store, index_client, http=http, collection=collection, slice_size=20
                )
        (crashed, _) = store.runs()
        assert crashed.status == "failed" and crashed.publication is None
        stored = _stored_documents(store)
        after = await _indexed(typesense_server, collection, store)
    # Nothing was removed; a document is either this run's, equal to what the store
    # committed, or the previous publish's, untouched.
    assert after.keys() == before.keys() == stored.keys()
    newer = [i for i in after if after[i]["publish_seq"] != before[i]["publish_seq"]]
    older = [i for i in after if after[i]["publish_seq"] == before[i]["publish_seq"]]
    assert all(_same_values(_without_seq(after[i]), stored[i]) for i in newer)
    assert all(after[i] == before[i] for i in older)
    # Imports run a bounded number of slices behind (eight queued, and one import joins
    # at most what was queued): by the 40th slice, the first ones were indexed.
    assert len(newer) >= 20
    # The slices from the 40th on, and Yearn, were never written: older documents.
    assert len(older) >= _expected_count() - 39 * 20


def _without_pool(pool_id: str):
    """A handler serving /pools without one recorded pool (the source no longer lists it)."""

    def handler(request: httpx.Request) -> httpx.Response:
        response = fixture_handler(request)
        if request.url.host == "yields.llama.fi" and request.url.path == "/pools":
            body = json.loads(response.content)
            body["data"] = [row for row in body["data"] if row.get("poolId") != pool_id]
            return httpx.Response(200, json=body, headers={"date": response.headers["date"]})
        return response

    return handler


async def test_a_run_over_unchanged_recordings_publishes_nothing_and_gone_vaults_are_deleted(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    expected = _expected_count()
    async with http_client() as http:
        first = await run_pipeline(_subset(), store, index_client, http=http, collection=collection)
        second = await run_pipeline(
            _subset(), store, index_client, http=http, collection=collection
        )
    assert first.ok and not first.incremental and first.upserted == expected
    assert second.ok and second.incremental
    assert (second.upserted, second.deleted) == (0, 0)
    assert second.run.publication is not None and second.run.publication.count == expected
    assert (await check(store, index_client, collection=collection)).ok

    # One changed pool: one document sent. One pool gone: one document deleted.
    rows = [r for r in load(CAMEL)["pools"] if r["project"] == "falcon-finance"]
    changed, gone = rows[0]["poolId"], next(r["poolId"] for r in load(CAMEL)["pools"][5:])
    async with http_client(_with_changed_pool(changed, 0.5)) as http:
        third = await run_pipeline(_subset(), store, index_client, http=http, collection=collection)
    assert (third.upserted, third.deleted) == (1, 0)
    async with http_client(_without_pool(gone)) as http:
        fourth = await run_pipeline(
            _subset(), store, index_client, http=http, collection=collection
        )
    assert fourth.ok and (fourth.upserted, fourth.deleted) == (1, 1)  # `changed` reverted
    gone_ids = [vid for vid in store.vault_ids() if vid.endswith(gone)]
    assert gone_ids == []
    assert store.counts().vaults == expected - 1
    info = await index_client.retrieve_collection(collection)
    assert info.num_documents == expected - 1
    assert (await check(store, index_client, collection=collection)).ok
