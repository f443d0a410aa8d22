"""One pipeline run: every processor, merged into the write store, then published.

A source that fails (HTTP error, bad payload, anything raised) is logged in the run with
its error and does not stop the others. The index is published when at least one source
succeeded; the run's status is ``ok`` (all sources and the publish succeeded), ``failed``
(no source succeeded) or ``partial`` (anything in between, a failed publish included).

Every source is fetched before any is parsed. A large source (a `SlicedProcessor`) is
parsed slice by slice and each slice's final vaults are written at once, one transaction
each; only vaults enrichment may still change wait until every source is parsed and
enriched (enrichment joins all of them), and the other sources are written after that. A
slice goes to the index once it has committed, so Typesense indexes while the next slice
is parsed and merged. A
store write failing midway fails its source with the slices before it kept (and
published); the publish still ends with every stored vault pushed, so the index shows the
store. A crash midway leaves the index with this run's committed slices and older
documents for the rest: nothing is removed from it until a publish has pushed everything.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass

import httpx
from pydantic import BaseModel, Field

from albert.search.typesense_client import TypesenseClient, TypesenseError
from data_server.fixtures import YEARN_CHAINS, offline_transport, recorded_chart_pools
from data_server.gc_pause import collector_paused
from data_server.pipeline.enrich import (
    StoredNaming,
    fill_asset_symbols,
    lacks_symbols,
    symbol_registry,
)
from data_server.pipeline.progress import NullProgress, PipelineProgress
from data_server.processors import (
    BeefyProcessor,
    DefiLlamaProcessor,
    Processor,
    ProcessorResult,
    YearnProcessor,
)
from data_server.processors.base import RawBatch, SlicedProcessor, describe_error
from data_server.security.exploits import fetch_exploit_counts, with_exploits
from data_server.store import Publication, RunRecord, SourceRun, VaultStore
from data_server.store.sqlite import RunStatus, UpsertCounts
from data_server.vaults.index import COLLECTION, DocumentBatch, Publisher, encode_vaults
from data_server.vaults.model import Vault

HTTP_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
USER_AGENT = "albert-data-pipeline/0.1"

log = logging.getLogger(__name__)


class PipelineReport(BaseModel):
    """What a run did: its log record, plus the publish error if the publish raised."""

    run: RunRecord
    publish_error: str | None = None
    upserted: int = Field(0, description="Documents the index accepted in this run")
    deleted: int = Field(0, description="Documents removed from the index in this run")
    incremental: bool = Field(False, description="Only changes since the last publish sent")
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


@dataclass
class _Fetched:
    """One source: its raw batch once fetched, its result once parsed, or its error."""

    raw: RawBatch | None = None
    result: ProcessorResult | None = None
    error: str | None = None
    duration: float = 0.0


async def _fetch_one(processor: Processor, http: httpx.AsyncClient) -> _Fetched:
    started = time.monotonic()
    try:
        raw = await processor.fetch(http)
    except Exception as exc:  # a broken source must not stop the others
        return _Fetched(error=describe_error(exc), duration=time.monotonic() - started)
    return _Fetched(raw=raw, duration=time.monotonic() - started)


def _parse(processor: Processor, fetched: _Fetched) -> None:
    """Parse a fetched batch whole (fetch warnings first), or record why it failed."""
    assert fetched.raw is not None
    started = time.monotonic()
    try:
        result = processor.parse(fetched.raw)
    except Exception as exc:  # a broken source must not stop the others
        fetched.error = describe_error(exc)
    else:
        result.warnings[:0] = fetched.raw.warnings
        fetched.result = result
    fetched.duration += time.monotonic() - started


@dataclass
class _Exploits:
    """Exploits per protocol from the hacks register, or why they could not be read."""

    counts: dict[str, int] | None = None
    error: str | None = None


async def _fetch_exploits(http: httpx.AsyncClient) -> _Exploits:
    try:
        return _Exploits(counts=await fetch_exploit_counts(http))
    except Exception as exc:  # the scores then keep the sources' own inputs
        return _Exploits(error=describe_error(exc))


async def _fetch_all(
    sources: Sequence[Processor], http: httpx.AsyncClient | None
) -> tuple[list[_Fetched], _Exploits]:
    client = http or httpx.AsyncClient(
        timeout=HTTP_TIMEOUT, headers={"user-agent": USER_AGENT}, follow_redirects=True
    )
    try:
        exploits = asyncio.ensure_future(_fetch_exploits(client))
        fetched = list(await asyncio.gather(*(_fetch_one(p, client) for p in sources)))
        return fetched, await exploits
    finally:
        if http is None:
            await client.aclose()


# Vaults per store transaction and per import request while merging: the first slice is
# indexed while the next ones are merged, so a smaller slice starts Typesense sooner.
MERGE_SLICE = 1000
# The first slice of a large source: until it is written, Typesense has nothing to do.
FIRST_SLICE = 250


def _write_slice(
    store: VaultStore,
    vaults: list[Vault],
    revision: int,
    seq: int | None,
    since: int | None = None,
) -> tuple[UpsertCounts, DocumentBatch | None]:
    """Upsert one slice (one transaction) and encode its documents for publish `seq`:
    all of them, or (`since`, an incremental publish) those whose rows changed after
    that revision; an unchanged vault's document is already in the index."""
    # One serialisation per vault serves the stored row and its hash.
    records = [vault.model_dump_json() for vault in vaults]
    rows: dict[str, int] = {}
    counts = store.upsert_vaults(vaults, records=records, revision=revision, row_revisions=rows)
    if seq is None:
        return counts, None
    # A vault listed twice is published as stored: its last record.
    last = {vault.id: vault for vault in vaults}
    changed = [v for v in last.values() if since is None or rows[v.id] > since]
    return counts, encode_vaults(changed, seq, rows)


class _SourceWriter:
    """Writes one source's vaults slice by slice, each published once committed.

    All slices take one store revision, as one transaction would. A slice that fails stops
    the writes: the slices before it stay written (and published), and the outcome says
    what was written along with the error.
    """

    def __init__(
        self,
        store: VaultStore,
        publisher: Publisher | None,
        slice_size: int,
        source: str,
        exploits: dict[str, int] | None = None,
    ) -> None:
        self.store = store
        self.exploits = exploits or {}
        self.publisher = publisher
        self.slice_size = slice_size
        self.source = source
        self.counts = UpsertCounts()
        self.written: set[str] = set()
        self.error: str | None = None
        self.removed = 0
        self._revision: int | None = None

    async def write(self, vaults: list[Vault]) -> None:
        """Write (and hand to the publisher) these vaults, unless an earlier write failed."""
        if self.error is not None or not vaults:
            return
        vaults = with_exploits(vaults, self.exploits)
        seq = self.publisher.seq if self.publisher is not None else None
        since = self.publisher.since_revision if self.publisher is not None else None
        try:
            if self._revision is None:
                self._revision = await asyncio.to_thread(self.store.next_revision)
            for start in range(0, len(vaults), self.slice_size):
                part = vaults[start : start + self.slice_size]
                written, batch = await asyncio.to_thread(
                    _write_slice, self.store, part, self._revision, seq, since
                )
                self.counts.inserted += written.inserted
                self.counts.updated += written.updated
                self.counts.unchanged += written.unchanged
                self.written.update(vault.id for vault in part)
                if self.publisher is not None and batch is not None:
                    await self.publisher.push(batch)
        except Exception as exc:  # a store write failing for one source is logged too
            self.error = describe_error(exc)

    async def _remove_gone(self, listed: set[str]) -> None:
        """Remove the stored vaults of this source that it no longer lists, and (with the
        publish) their documents. Only after a complete, successful parse of the source."""
        stored = await asyncio.to_thread(lambda: self.store.vault_ids(source=self.source))
        gone = [vault_id for vault_id in stored if vault_id not in listed]
        if not gone:
            return
        self.removed = await asyncio.to_thread(self.store.remove_vaults, gone)
        if self.publisher is not None:
            self.publisher.remove(gone)

    async def finish(self, result: ProcessorResult) -> SourceRun:
        """Write the source's vaults not written yet, then its history; its outcome."""
        # By id (stable: of a vault listed twice the later wins, as in one transaction):
        # documents go out in the order a publish of the whole store sends them.
        rest = sorted(
            (vault for vault in result.vaults if vault.id not in self.written),
            key=lambda vault: vault.id,
        )
        await self.write(rest)
        counts = self.counts
        if self.error is None:
            # History may only reference vaults the store knows (a chart row without its
            # pool).
            known = {v.id for v in result.vaults}
            history = [p for p in result.history if p.vault_id in known]
            try:
                await asyncio.to_thread(self.store.upsert_history, history)
                await self._remove_gone(known)
            except Exception as exc:
                self.error = describe_error(exc)
        if self.error is not None:
            return SourceRun(
                source=self.source,
                ok=False,
                vaults=counts.inserted + counts.updated + counts.unchanged,
                inserted=counts.inserted,
                updated=counts.updated,
                unchanged=counts.unchanged,
                warnings=result.warnings,
                error=self.error,
            )
        return SourceRun(
            source=self.source,
            ok=True,
            vaults=len(result.vaults),
            history_points=len(history),
            inserted=counts.inserted,
            updated=counts.updated,
            unchanged=counts.unchanged,
            warnings=result.warnings,
        )


def _next_slice(
    slices: Generator[list[Vault], None, ProcessorResult],
) -> tuple[list[Vault], ProcessorResult | None]:
    # StopIteration cannot cross into a future: the result comes back as a value.
    try:
        return next(slices), None
    except StopIteration as stop:
        return [], stop.value


async def _parse_in_slices(
    processor: SlicedProcessor, fetched: _Fetched, writer: _SourceWriter
) -> None:
    """Parse a raw batch slice by slice, writing each slice's final vaults as it comes.

    A vault enrichment may still change (`lacks_symbols`) waits for the other sources; a
    failed write stops the writes, not the parse (its vaults still inform enrichment).
    """
    assert fetched.raw is not None
    started = time.monotonic()
    try:
        # The first slice is small, so Typesense starts sooner; the rest go out whole.
        slices = processor.parse_slices(fetched.raw, min(FIRST_SLICE, writer.slice_size))
        pending: list[Vault] = []
        first = True
        while True:
            part, result = await asyncio.to_thread(_next_slice, slices)
            if result is not None:
                break
            pending.extend(vault for vault in part if not lacks_symbols(vault))
            if first or len(pending) >= writer.slice_size:
                cut = len(pending) if first else writer.slice_size
                await writer.write(pending[:cut])
                pending, first = pending[cut:], False
        await writer.write(pending)
    except Exception as exc:  # a broken source must not stop the others
        fetched.error = describe_error(exc)
    else:
        result.warnings[:0] = fetched.raw.warnings
        fetched.result = result
    fetched.duration += time.monotonic() - started


def _checkpoint(store: VaultStore) -> None:
    # A checkpoint that fails leaves the WAL to the next one; the run's writes are
    # committed either way.
    try:
        store.checkpoint()
    except Exception as exc:
        log.warning("store checkpoint after the writes failed: %s", exc)


def _stored_namings(store: VaultStore) -> list[StoredNaming]:
    return [
        StoredNaming(chain, [token], symbols)
        for chain, token, symbols in store.single_token_namings()
    ]


def _enrich(store_vaults: list[StoredNaming], results: list[ProcessorResult]) -> None:
    registry = symbol_registry([*store_vaults, *(v for r in results for v in r.vaults)])
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
    # The run allocates a few hundred thousand long-lived objects; see `gc_pause`. Its
    # ~20 MB of writes are checkpointed once, while the publish ends (`_checkpoint`).
    with collector_paused(), store.checkpoints_deferred():
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
    run_id = await asyncio.to_thread(store.start_run)
    log.info("pipeline run %s started", run_id)
    progress.start(len(sources) + 1)
    publisher: Publisher | None = None
    if index_client is not None:
        since = await incremental_base(store, index_client, collection)
        publisher = Publisher(
            store, index_client, collection=collection, run_id=run_id, since_revision=since
        )
    try:
        fetched, exploits = await _fetch_all(sources, http)
        # Enrichment reads the store as it was before this run writes anything.
        store_vaults = await asyncio.to_thread(_stored_namings, store)
        writers = {
            index: _SourceWriter(
                store, publisher, slice_size, processor.name, exploits.counts or {}
            )
            for index, processor in enumerate(sources)
        }
        # Large sources first: their final vaults are written and published while they
        # parse, so Typesense starts indexing before the other sources are even parsed.
        for index, processor in enumerate(sources):
            if isinstance(processor, SlicedProcessor) and fetched[index].raw is not None:
                await _parse_in_slices(processor, fetched[index], writers[index])
        for index, processor in enumerate(sources):
            if fetched[index].raw is not None and fetched[index].result is None:
                if not isinstance(processor, SlicedProcessor):
                    await asyncio.to_thread(_parse, processor, fetched[index])
        results = [f.result for f in fetched if f.result is not None]
        await asyncio.to_thread(_enrich, store_vaults, results)
        outcomes: list[SourceRun] = []
        order = sorted(range(len(sources)), key=lambda i: not writers[i].written)
        for index in order:
            processor, one = sources[index], fetched[index]
            if one.result is None:
                writer = writers[index]
                outcome = SourceRun(
                    source=processor.name,
                    ok=False,
                    vaults=len(writer.written),
                    inserted=writer.counts.inserted,
                    updated=writer.counts.updated,
                    unchanged=writer.counts.unchanged,
                    error=one.error,
                )
            else:
                outcome = await writers[index].finish(one.result)
            outcome.duration_s = round(one.duration, 3)
            if exploits.error is not None and outcome.ok:
                outcome.warnings.append(f"exploit history: {exploits.error}")
            await asyncio.to_thread(store.record_source, run_id, outcome)
            outcomes.append(outcome)
            progress.step(_describe(outcome))

        # What the sources fetched and parsed is no longer needed. Freed now, while
        # Typesense is still importing queued slices, it costs no wall time; freed at the
        # end of the run (~0.1 s of CPU for 20,000 vaults), it came after the last import.
        for one in fetched:
            one.raw = one.result = None
        results.clear()
        store_vaults.clear()
        # Every source is written: the WAL is copied into the database file while
        # Typesense imports what is queued, instead of stalling the writes above.
        checkpoint = asyncio.create_task(asyncio.to_thread(_checkpoint, store))
        try:
            publication, publish_error, line = await _publish_step(publisher, outcomes, collection)
        finally:
            await checkpoint
        progress.step(line)
        status = _status(outcomes, publication)
        await asyncio.to_thread(store.finish_run, run_id, status)
        record = await asyncio.to_thread(store.get_run, run_id)
        assert record is not None  # written above, in this process
        progress.finish(f"run {run_id}: {status}")
    except BaseException as exc:
        # A crash (or cancellation) must not leave the run "running" or the display live.
        if publisher is not None:
            await asyncio.shield(publisher.abort())
        why = "cancelled" if isinstance(exc, asyncio.CancelledError) else describe_error(exc)
        log.warning("pipeline run %s failed: %s", run_id, why)
        await _close_failed(store, run_id)
        progress.finish(f"run {run_id}: aborted")
        raise
    _log_outcome(record, outcomes, publish_error, time.monotonic() - started, publisher)
    return PipelineReport(
        run=record,
        publish_error=publish_error,
        duration_s=round(time.monotonic() - started, 3),
        upserted=publisher.upserted if publisher is not None else 0,
        deleted=publisher.deleted if publisher is not None else 0,
        incremental=publisher is not None and publisher.since_revision is not None,
    )


# A failed run is closed within this; past it (the store not answering) the run stays
# `running` until the next run that takes the lock closes it as abandoned.
CLOSE_FAILED_SECONDS = 10.0


async def _close_failed(store: VaultStore, run_id: str) -> None:
    try:
        await asyncio.wait_for(
            asyncio.to_thread(store.finish_run, run_id, "failed"), CLOSE_FAILED_SECONDS
        )
    except Exception as exc:  # the run's own error is the one to raise
        log.warning(
            "pipeline run %s not closed as failed (%s); the next run closes it as abandoned",
            run_id,
            describe_error(exc) if str(exc) else type(exc).__name__,
        )


def _log_outcome(
    record: RunRecord,
    outcomes: list[SourceRun],
    publish_error: str | None,
    seconds: float,
    publisher: Publisher | None,
) -> None:
    """One line per finished run: INFO when it is ok or partial, WARNING when it failed."""
    sent = publisher.upserted if publisher is not None else 0
    deleted = publisher.deleted if publisher is not None else 0
    why = [f"{o.source} failed" for o in outcomes if not o.ok]
    if publish_error:
        why.append(f"publish: {publish_error}")
    level = logging.WARNING if record.status == "failed" else logging.INFO
    log.log(
        level,
        "pipeline run %s: %s in %.1f s (%d documents sent, %d deleted)%s",
        record.id,
        record.status,
        seconds,
        sent,
        deleted,
        f": {'; '.join(why)}" if why and record.status != "ok" else "",
    )


async def incremental_base(
    store: VaultStore, client: TypesenseClient, collection: str
) -> int | None:
    """The store revision an incremental publish can start from, or None for a full one.

    That is the last successful publish's, when the collection still holds the number of
    documents it left (an index wiped or rebuilt since gets everything again).
    """
    last = await asyncio.to_thread(store.last_publication, collection)
    if last is None:
        return None
    try:
        info = await client.retrieve_collection(collection)
    except TypesenseError:
        return None
    return last.revision if info.num_documents == last.count else None


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


# The reason the offline recordings (data_server.fixtures) give for a URL nobody recorded:
# not a fault, a part of a source the offline demo goes without.
NOT_RECORDED = "HTTP 404 Not Recorded"


def summarize_warnings(warnings: Sequence[str]) -> str:
    """`N warnings`, followed by what they were: labels grouped by their reason; and the
    parts the offline recordings lack, apart (they are not faults).

    A count alone says nothing: `3 warnings (apy_breakdown, apy: HTTP 500 …)` says which
    parts of a source failed and why; `no recording for apy_breakdown, apy, tvl (the
    offline demo goes without them)` that the offline demo has no recording of those.
    Every warning is in the run log (`source_runs`) in full.
    """
    groups: dict[str, list[str]] = {}
    for warning in warnings:
        label, _, reason = warning.partition(": ")
        reason = _HTTP_STATUS.sub(lambda m: f"HTTP {m.group(1)}", reason)
        groups.setdefault(reason, []).append(label)
    missing = groups.pop(NOT_RECORDED, [])
    said = _grouped(groups) if groups or not missing else ""
    if not missing:
        return said
    shown = _labels(missing)
    unrecorded = f"no recording for {shown} (the offline demo goes without them)"
    return f"{said}; {unrecorded}" if said else unrecorded


def _labels(labels: list[str]) -> str:
    return ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")


def _grouped(groups: dict[str, list[str]]) -> str:
    total = sum(len(labels) for labels in groups.values())
    count = f"{total} warning{'' if total == 1 else 's'}"
    if not groups:
        return count
    parts = []
    for reason, labels in list(groups.items())[:MAX_WARNING_GROUPS]:
        shown = _labels(labels)
        parts.append(f"{shown}: {reason}" if reason else shown)
    if len(groups) > MAX_WARNING_GROUPS:
        more = len(groups) - MAX_WARNING_GROUPS
        parts.append(f"{more} more kind{'' if more == 1 else 's'}")
    return f"{count} ({'; '.join(parts)})"
