"""One pipeline run: every processor, merged into the write store, then published.

A source that fails (HTTP error, bad payload, anything raised) is logged in the run with
its error and does not stop the others. The index is published when at least one source
succeeded; the run's status is ``ok`` (all sources and the publish succeeded), ``failed``
(no source succeeded) or ``partial`` (anything in between, a failed publish included).

Every source is fetched, parsed and enriched (enrichment joins all of them) before any is
merged. Each source is then written in slices, one transaction each, and a slice goes to
the index once it has committed, so Typesense indexes while the next slice is merged. A
store write failing midway fails its source with the slices before it kept (and
published); the publish still ends with every stored vault pushed, so the index shows the
store. A crash midway leaves the index with this run's committed slices and older
documents for the rest: nothing is removed from it until a publish has pushed everything.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence

import httpx
from pydantic import BaseModel, Field

from albert.search.typesense_client import TypesenseClient
from data_server.fixtures import YEARN_CHAINS, offline_transport, recorded_chart_pools
from data_server.gc_pause import collector_paused
from data_server.pipeline.enrich import fill_asset_symbols, symbol_registry
from data_server.pipeline.progress import NullProgress, PipelineProgress
from data_server.processors import (
    BeefyProcessor,
    DefiLlamaProcessor,
    Processor,
    ProcessorResult,
    YearnProcessor,
    run_processor,
)
from data_server.processors.base import describe_error
from data_server.store import Publication, RunRecord, SourceRun, VaultStore
from data_server.store.sqlite import RunStatus, UpsertCounts
from data_server.vaults.index import COLLECTION, DocumentBatch, Publisher, encode_records
from data_server.vaults.model import Vault

HTTP_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
USER_AGENT = "albert-data-pipeline/0.1"


class PipelineReport(BaseModel):
    """What a run did: its log record, plus the publish error if the publish raised."""

    run: RunRecord
    publish_error: str | None = None
    duration_s: float = Field(description="Wall time of the whole run")

    @property
    def ok(self) -> bool:
        """True when every source and the publish succeeded."""
        return self.run.status == "ok"


def default_processors() -> list[Processor]:
    """The processors of an online run, at the public APIs' URLs."""
    return [DefiLlamaProcessor(), BeefyProcessor(), YearnProcessor()]


def offline_processors() -> list[Processor]:
    """The same processors configured for what the recordings cover."""
    return [
        DefiLlamaProcessor(chart_pools=recorded_chart_pools()),
        BeefyProcessor(),
        YearnProcessor(chains=YEARN_CHAINS),
    ]


def offline_http() -> httpx.AsyncClient:
    """An HTTP client whose requests to the public APIs are answered from the recordings."""
    return httpx.AsyncClient(transport=offline_transport(), headers={"user-agent": USER_AGENT})


async def _fetch_one(
    processor: Processor, http: httpx.AsyncClient
) -> tuple[ProcessorResult | None, str | None, float]:
    started = time.monotonic()
    try:
        result = await run_processor(processor, http)
    except Exception as exc:  # a broken source must not stop the others
        return None, describe_error(exc), time.monotonic() - started
    return result, None, time.monotonic() - started


# Vaults per store transaction and per import request while merging: the first slice is
# indexed while the next ones are merged, so a smaller slice starts Typesense sooner.
MERGE_SLICE = 1000


def _write_slice(
    store: VaultStore, vaults: list[Vault], revision: int, seq: int | None
) -> tuple[UpsertCounts, DocumentBatch | None]:
    """Upsert one slice (one transaction) and encode its documents for publish `seq`."""
    # One serialisation per vault: the stored row, its hash and its index document.
    records = [vault.model_dump_json() for vault in vaults]
    counts = store.upsert_vaults(vaults, records=records, revision=revision)
    if seq is None:
        return counts, None
    # A vault listed twice is published as stored: its last record.
    last = {vault.id: record for vault, record in zip(vaults, records, strict=True)}
    return counts, encode_records(last.items(), seq)


async def _merge(
    store: VaultStore, result: ProcessorResult, publisher: Publisher | None, slice_size: int
) -> SourceRun:
    """Write a source's vaults slice by slice, each published once committed; then history.

    All slices take one store revision, as one transaction would. A slice that fails stops
    the source: the slices before it stay written (and published), and the outcome says
    what was written along with the error.
    """
    # By id: each slice reads back only its own id range, and documents go out in id order.
    vaults = sorted(result.vaults, key=lambda vault: vault.id)
    counts = UpsertCounts()
    try:
        revision = await asyncio.to_thread(store.next_revision)
        seq = publisher.seq if publisher is not None else None
        for start in range(0, len(vaults), slice_size):
            part = vaults[start : start + slice_size]
            written, batch = await asyncio.to_thread(_write_slice, store, part, revision, seq)
            counts.inserted += written.inserted
            counts.updated += written.updated
            counts.unchanged += written.unchanged
            if publisher is not None and batch is not None:
                await publisher.push(batch)
        # History may only reference vaults the store knows (a chart row without its pool).
        known = {v.id for v in result.vaults}
        history = [p for p in result.history if p.vault_id in known]
        await asyncio.to_thread(store.upsert_history, history)
    except Exception as exc:  # a store write failing for one source is logged too
        return SourceRun(
            source=result.source,
            ok=False,
            vaults=counts.inserted + counts.updated + counts.unchanged,
            inserted=counts.inserted,
            updated=counts.updated,
            unchanged=counts.unchanged,
            warnings=result.warnings,
            error=describe_error(exc),
        )
    return SourceRun(
        source=result.source,
        ok=True,
        vaults=len(result.vaults),
        history_points=len(history),
        inserted=counts.inserted,
        updated=counts.updated,
        unchanged=counts.unchanged,
        warnings=result.warnings,
    )


async def _fetch_all(
    sources: Sequence[Processor], http: httpx.AsyncClient | None
) -> list[tuple[ProcessorResult | None, str | None, float]]:
    client = http or httpx.AsyncClient(
        timeout=HTTP_TIMEOUT, headers={"user-agent": USER_AGENT}, follow_redirects=True
    )
    try:
        return list(await asyncio.gather(*(_fetch_one(p, client) for p in sources)))
    finally:
        if http is None:
            await client.aclose()


def _enrich(store: VaultStore, results: list[ProcessorResult]) -> None:
    registry = symbol_registry([*store.iter_vaults(), *(v for r in results for v in r.vaults)])
    for result in results:
        result.vaults, _ = fill_asset_symbols(result.vaults, registry)


async def _publish_step(
    publisher: Publisher | None, outcomes: list[SourceRun], collection: str
) -> tuple[Publication | None, str | None, str]:
    """(publication, error, progress line)."""
    if publisher is None:
        return None, "no index configured", "publish skipped: no index configured"
    # Once a slice went out, the publish is finished even if its source then failed: the
    # index then shows the store as it is, not a mix of this run's writes and older ones.
    if not publisher.started and not any(o.ok for o in outcomes):
        return None, "no source succeeded", "publish skipped: no source succeeded"
    try:
        publication = await publisher.finish()
    except Exception as exc:  # the run log must say why the index was not updated
        error = describe_error(exc)
        return None, error, f"publish failed: {error}"
    line = f"published {publication.count} documents to '{collection}'"
    return publication, publication.error, line


def _status(outcomes: list[SourceRun], publication: Publication | None) -> RunStatus:
    if not any(o.ok for o in outcomes):
        return "failed"
    if all(o.ok for o in outcomes) and publication is not None and publication.error is None:
        return "ok"
    return "partial"


async def run_pipeline(
    sources: Sequence[Processor],
    store: VaultStore,
    index_client: TypesenseClient | None,
    progress: PipelineProgress | None = None,
    *,
    http: httpx.AsyncClient | None = None,
    collection: str = COLLECTION,
    slice_size: int = MERGE_SLICE,
) -> PipelineReport:
    """Run every processor, merge into the store, publish to the index; log it all.

    ``http`` is the client the processors fetch with (an offline one in tests and in the
    local stack); without it a client for the real APIs is created and closed here.
    ``index_client`` None skips the publish (the run is then at best ``partial``).
    ``slice_size`` vaults are written per store transaction and published once committed.
    """
    # The run allocates a few hundred thousand long-lived objects; see `gc_pause`.
    with collector_paused():
        return await _run(
            sources, store, index_client, progress or NullProgress(), http, collection, slice_size
        )


async def _run(
    sources: Sequence[Processor],
    store: VaultStore,
    index_client: TypesenseClient | None,
    progress: PipelineProgress,
    http: httpx.AsyncClient | None,
    collection: str,
    slice_size: int,
) -> PipelineReport:
    started = time.monotonic()
    run_id = store.start_run()
    progress.start(len(sources) + 1)
    publisher: Publisher | None = None
    if index_client is not None:
        publisher = Publisher(store, index_client, collection=collection, run_id=run_id)
    try:
        fetched = await _fetch_all(sources, http)
        await asyncio.to_thread(_enrich, store, [r for r, _, _ in fetched if r is not None])
        outcomes: list[SourceRun] = []
        for processor, (result, error, duration) in zip(sources, fetched, strict=True):
            if result is None:
                outcome = SourceRun(source=processor.name, ok=False, error=error)
            else:
                outcome = await _merge(store, result, publisher, slice_size)
            outcome.duration_s = round(duration, 3)
            store.record_source(run_id, outcome)
            outcomes.append(outcome)
            progress.step(_describe(outcome))

        publication, publish_error, line = await _publish_step(publisher, outcomes, collection)
        progress.step(line)
        status = _status(outcomes, publication)
        store.finish_run(run_id, status)
        record = store.get_run(run_id)
        assert record is not None  # written above, in this process
        progress.finish(f"run {run_id}: {status}")
    except BaseException:
        # A crash (or cancellation) must not leave the run "running" or the display live.
        if publisher is not None:
            await asyncio.shield(publisher.abort())
        store.finish_run(run_id, "failed")
        progress.finish(f"run {run_id}: aborted")
        raise
    return PipelineReport(
        run=record, publish_error=publish_error, duration_s=round(time.monotonic() - started, 3)
    )


def _describe(outcome: SourceRun) -> str:
    if not outcome.ok:
        return f"{outcome.source}: FAILED ({outcome.error})"
    return (
        f"{outcome.source}: {outcome.vaults} vaults "
        f"(+{outcome.inserted} new, {outcome.updated} updated), "
        f"{outcome.history_points} history points, {summarize_warnings(outcome.warnings)}"
    )


_HTTP_STATUS = re.compile(r"HTTPStatusError: \w+ error '(\d{3}[^']*)' for url '[^']*'")
MAX_WARNING_GROUPS = 3


def summarize_warnings(warnings: Sequence[str]) -> str:
    """`N warnings`, followed by what they were: labels grouped by their reason.

    A count alone says nothing: `3 warnings (apy_breakdown, apy, tvl: HTTP 404 Not
    Recorded)` says which parts of a source were missing and why. Every warning is in
    the run log (`source_runs`) in full.
    """
    count = f"{len(warnings)} warning{'' if len(warnings) == 1 else 's'}"
    if not warnings:
        return count
    groups: dict[str, list[str]] = {}
    for warning in warnings:
        label, _, reason = warning.partition(": ")
        reason = _HTTP_STATUS.sub(lambda m: f"HTTP {m.group(1)}", reason)
        groups.setdefault(reason, []).append(label)
    parts = []
    for reason, labels in list(groups.items())[:MAX_WARNING_GROUPS]:
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        parts.append(f"{shown}: {reason}" if reason else shown)
    if len(groups) > MAX_WARNING_GROUPS:
        more = len(groups) - MAX_WARNING_GROUPS
        parts.append(f"{more} more kind{'' if more == 1 else 's'}")
    return f"{count} ({'; '.join(parts)})"
