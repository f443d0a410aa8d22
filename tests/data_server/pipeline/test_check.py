"""The staleness check against a real Typesense: drift is reported, a publish clears it."""

from __future__ import annotations

from albert.search.typesense_client import TypesenseClient
from data_server.pipeline import check, run_pipeline
from data_server.processors import YearnProcessor
from data_server.store import VaultStore
from data_server.vaults.index import publish

from .conftest import http_client


async def _seeded(store: VaultStore, client: TypesenseClient, collection: str) -> None:
    async with http_client() as http:
        report = await run_pipeline(
            [YearnProcessor(chains=(8453,))], store, client, http=http, collection=collection
        )
    assert report.ok


async def test_store_change_without_publish_is_drift_until_published(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    await _seeded(store, index_client, collection)
    clean = await check(store, index_client, collection=collection)
    assert clean.ok, clean.summary()
    assert clean.sampled > 0 and clean.index_count == store.counts().vaults

    vault = next(v for v in store.iter_vaults() if v.apy is not None)
    store.upsert_vaults([vault.model_copy(update={"apy": vault.apy + 3.0})])

    drift = await check(store, index_client, collection=collection)
    assert not drift.ok
    kinds = {issue.kind for issue in drift.issues}
    assert "unpublished_changes" in kinds and "sample_mismatch" in kinds
    assert drift.unpublished_changes == 1
    mismatch = next(m for m in drift.mismatches if m.field == "apy")
    assert mismatch.vault_id == vault.id
    assert abs(mismatch.store - (vault.apy + 3.0)) < 1e-9
    assert abs(mismatch.index - vault.apy) < 1e-4
    # Count and newest update agree: only the publication record and the values show it.
    assert "count" not in kinds

    await publish(store, index_client, collection=collection)
    after = await check(store, index_client, collection=collection)
    assert after.ok, after.summary()


async def test_index_losing_documents_is_drift(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    await _seeded(store, index_client, collection)
    removed = await index_client.delete_documents(collection, "status:=eol")
    assert removed > 0
    drift = await check(store, index_client, collection=collection)
    kinds = {issue.kind for issue in drift.issues}
    assert "count" in kinds
    assert drift.index_count == store.counts().vaults - removed
    await publish(store, index_client, collection=collection)
    assert (await check(store, index_client, collection=collection)).ok


async def test_newer_data_in_store_shows_as_newest_update_drift(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    await _seeded(store, index_client, collection)
    vault = next(iter(store.iter_vaults()))
    newest = store.fingerprint().newest_updated_at or 0
    store.upsert_vaults([vault.model_copy(update={"updated_at": newest + 3600})])
    drift = await check(store, index_client, collection=collection)
    assert {"newest_updated_at", "unpublished_changes"} <= {i.kind for i in drift.issues}


async def test_never_published_and_missing_collection(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    drift = await check(store, index_client, collection=collection)
    assert not drift.ok
    assert {i.kind for i in drift.issues} == {"never_published", "collection_missing"}


async def test_unreachable_index_is_reported(store: VaultStore) -> None:
    async with TypesenseClient("http://127.0.0.1:9", "key", timeout=1.0) as dead:
        drift = await check(store, dead, collection="vaults")
    assert "index_unreachable" in {i.kind for i in drift.issues}
