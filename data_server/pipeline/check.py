"""The staleness check: does the serving index still show what the write store holds?

A stale index gives wrong tool answers while the database looks healthy, so the check
compares the two directly and against the last publication record:

* counts: documents in the collection vs vaults in the store;
* newest data: the largest ``updated_at`` in the index vs in the store;
* unpublished changes: vaults whose store revision is newer than the last publish;
* checksum: the store's checksum vs the one recorded at the last publish (catches writes
  that bypassed the revision, e.g. a restored database file);
* sampled values: for the changed vaults (up to a limit) and an evenly spread sample,
  the indexed document's values vs the stored vault's.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from albert.search.typesense_client import SearchParams, TypesenseClient, TypesenseError
from data_server.store import Publication, StoreFingerprint, VaultStore
from data_server.vaults.index import COLLECTION, SAMPLE_FIELDS, document, with_display
from data_server.vaults.model import Vault

DriftKind = Literal[
    "index_unreachable",
    "collection_missing",
    "never_published",
    "count",
    "newest_updated_at",
    "unpublished_changes",
    "checksum",
    "sample_mismatch",
    "missing_in_index",
]

SAMPLE_SIZE = 25
CHANGED_SAMPLE_SIZE = 25
# Typesense stores `float` fields in single precision.
REL_TOLERANCE = 1e-6


class DriftIssue(BaseModel):
    """One way the index differs from the store."""

    kind: DriftKind
    detail: str


class ValueMismatch(BaseModel):
    """One sampled field whose indexed value differs from the stored one."""

    vault_id: str
    field: str
    store: Any
    index: Any


class DriftReport(BaseModel):
    """The result of a staleness check; ``ok`` means no drift was found."""

    ok: bool
    checked_at: float
    collection: str
    store: StoreFingerprint
    index_count: int | None = None
    index_newest_updated_at: int | None = None
    last_publication: Publication | None = None
    unpublished_changes: int = 0
    sampled: int = 0
    mismatches: list[ValueMismatch] = Field(default_factory=list)
    issues: list[DriftIssue] = Field(default_factory=list)

    def summary(self) -> str:
        """One line per issue, or 'no drift'."""
        if self.ok:
            return (
                f"no drift: {self.store.count} vaults in store and index "
                f"'{self.collection}', newest update {self.store.newest_updated_at}"
            )
        return "\n".join(f"{i.kind}: {i.detail}" for i in self.issues)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is None and b is None
        return math.isclose(float(a), float(b), rel_tol=REL_TOLERANCE, abs_tol=1e-9)
    return bool(a == b)


def _sample_ids(store: VaultStore, publication: Publication | None) -> list[str]:
    ids: list[str] = []
    if publication is not None:
        changed = store.iter_vaults(since_revision=publication.revision)
        for vault in changed:
            ids.append(vault.id)
            if len(ids) >= CHANGED_SAMPLE_SIZE:
                break
    all_ids = store.vault_ids()
    step = max(len(all_ids) // SAMPLE_SIZE, 1)
    ids.extend(all_ids[::step][:SAMPLE_SIZE])
    return list(dict.fromkeys(ids))


async def _indexed(
    client: TypesenseClient, collection: str, ids: list[str]
) -> dict[str, dict[str, Any] | None]:
    limiter = asyncio.Semaphore(8)

    async def one(vault_id: str) -> tuple[str, dict[str, Any] | None]:
        async with limiter:
            try:
                return vault_id, await client.get_document(collection, vault_id)
            except TypesenseError as exc:
                if exc.status == 404:
                    return vault_id, None
                raise

    return dict(await asyncio.gather(*(one(i) for i in ids)))


def _compare(vault: Vault, doc: dict[str, Any]) -> list[ValueMismatch]:
    expected = document(vault)
    out = []
    for field in (*SAMPLE_FIELDS, "status", "name", "risk_rating"):
        want, got = expected.get(field), doc.get(field)
        if not _same(want, got):
            out.append(ValueMismatch(vault_id=vault.id, field=field, store=want, index=got))
    return out


async def check(
    store: VaultStore,
    client: TypesenseClient,
    *,
    collection: str = COLLECTION,
    call: Callable[..., Awaitable[Any]] | None = None,
) -> DriftReport:
    """Compare the write store with the index and the last publication; report any drift.

    `call(fn, *args)` makes each store read off the event loop (`asyncio.to_thread` unless
    given: the server passes its bounded `StoreCalls`).
    """
    run = call or asyncio.to_thread
    fingerprint = await run(store.fingerprint)
    publication = await run(store.last_publication, collection)
    report = DriftReport(
        ok=False,
        checked_at=time.time(),
        collection=collection,
        store=fingerprint,
        last_publication=publication,
    )
    issues = report.issues

    if publication is None:
        issues.append(DriftIssue(kind="never_published", detail="no successful publish"))
    else:
        report.unpublished_changes = await run(store.changed_since, publication.revision)
        if report.unpublished_changes:
            issues.append(
                DriftIssue(
                    kind="unpublished_changes",
                    detail=f"{report.unpublished_changes} vaults changed since the publish "
                    f"at revision {publication.revision}",
                )
            )
        elif fingerprint.checksum != publication.checksum:
            issues.append(
                DriftIssue(
                    kind="checksum",
                    detail="store content differs from the last publish without a new revision",
                )
            )

    try:
        info = await client.retrieve_collection(collection)
    except TypesenseError as exc:
        kind: DriftKind = "collection_missing" if exc.status == 404 else "index_unreachable"
        issues.append(DriftIssue(kind=kind, detail=str(exc)))
        return report
    report.index_count = info.num_documents
    if info.num_documents != fingerprint.count:
        issues.append(
            DriftIssue(
                kind="count",
                detail=f"index has {info.num_documents} documents, store has "
                f"{fingerprint.count} vaults",
            )
        )

    newest = await client.search(
        collection,
        SearchParams(q="*", sort_by="updated_at:desc", per_page=1, include_fields="updated_at"),
    )
    if newest.hits:
        report.index_newest_updated_at = newest.hits[0].document.get("updated_at")
    if report.index_newest_updated_at != fingerprint.newest_updated_at:
        issues.append(
            DriftIssue(
                kind="newest_updated_at",
                detail=f"newest update in index {report.index_newest_updated_at}, "
                f"in store {fingerprint.newest_updated_at}",
            )
        )

    ids = await run(_sample_ids, store, publication)
    vaults = await run(store.get_vaults, ids)
    docs = await _indexed(client, collection, [v.id for v in vaults])
    # Each document with its publish's display fields (`apy_reward` is compared).
    present = [doc for doc in docs.values() if doc is not None]
    filled = await run(with_display, present, store)
    docs.update((doc["id"], doc) for doc in filled)
    report.sampled = len(vaults)
    missing = [v.id for v in vaults if docs.get(v.id) is None]
    if missing:
        issues.append(
            DriftIssue(
                kind="missing_in_index",
                detail=f"{len(missing)} sampled vaults absent: {', '.join(missing[:5])}",
            )
        )
    for vault in vaults:
        doc = docs.get(vault.id)
        if doc is not None:
            report.mismatches.extend(_compare(vault, doc))
    if report.mismatches:
        first = report.mismatches[0]
        issues.append(
            DriftIssue(
                kind="sample_mismatch",
                detail=f"{len(report.mismatches)} sampled values differ, e.g. {first.vault_id} "
                f"{first.field}: store {first.store!r}, index {first.index!r}",
            )
        )
    report.ok = not issues
    return report
