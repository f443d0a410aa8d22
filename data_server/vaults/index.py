"""The Typesense ``vaults`` collection: its schema, the document of a vault, and publish.

Documents are the flattened :class:`~data_server.vaults.model.Vault` (document id = vault id)
plus fields derived for filtering and sorting: ``reward_share`` (percent of the APY paid as
rewards) and the security inputs ``audits``, ``protocol_age_days``, ``exploits`` and
``source_flags``. Unknown values are left out of a document rather than sent as null, so
numeric filters such as ``apy:>5`` never match a vault whose APY is unknown.

``publish`` pushes every stored vault (upsert), removes documents of earlier publishes
that the store no longer has, and records what it published in the run log.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from albert.search.typesense_client import TypesenseClient, TypesenseError
from data_server.store import Publication, VaultStore
from data_server.vaults.model import Vault

COLLECTION = "vaults"
BATCH_SIZE = 1000
SAMPLE_SIZE = 20

# Fields whose published values the staleness check compares with the store.
SAMPLE_FIELDS = ("apy", "apy_base", "apy_reward", "tvl_usd", "security_score", "updated_at")


def _field(name: str, type_: str, **options: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **options}


def collection_schema(name: str = COLLECTION) -> dict[str, Any]:
    """The explicit schema of the vaults collection."""
    facet = {"facet": True}
    optional = {"optional": True}
    return {
        "name": name,
        "fields": [
            _field("name", "string"),
            _field("source", "string", **facet),
            _field("protocol", "string", **facet),
            _field("chain", "string", **facet),
            _field("address", "string", **facet, **optional),
            _field("asset_symbols", "string[]", **facet),
            _field("underlying_tokens", "string[]", **facet, **optional),
            _field("stablecoin", "bool", **facet),
            _field("il_risk", "bool", **facet),
            _field("exposure", "string", **facet),
            _field("risk_rating", "string", **facet, **optional),
            _field("status", "string", **facet),
            _field("source_flags", "string[]", **facet, **optional),
            _field("apy", "float", **optional),
            _field("apy_base", "float", **optional),
            _field("apy_reward", "float", **optional),
            _field("reward_share", "float", **optional),
            _field("tvl_usd", "float", **optional),
            _field("share_price", "float", **optional),
            _field("security_score", "float", **optional),
            _field("protocol_age_days", "int32", **optional),
            _field("audits", "int32", **optional),
            _field("exploits", "int32", **optional),
            _field("url", "string", index=False, **optional),
            _field("updated_at", "int64"),
            # Which publish wrote the document; older ones are removed after a full publish.
            _field("publish_seq", "int64"),
        ],
        "default_sorting_field": "updated_at",
    }


async def ensure_schema(client: TypesenseClient, collection: str = COLLECTION) -> bool:
    """Create the collection, or recreate it when it lacks a field of the current schema.

    Every publish rewrites every document, so recreating loses nothing but the time until
    the import ends. Returns True when the collection was (re)created.
    """
    schema = collection_schema(collection)
    try:
        info = await client.retrieve_collection(collection)
    except TypesenseError as exc:
        if exc.status != 404:
            raise
    else:
        present = {(f.get("name"), f.get("type")) for f in info.fields}
        if all((f["name"], f["type"]) in present for f in schema["fields"]):
            return False
        await client.drop_collection(collection)
    await client.ensure_collection(schema)
    return True


def reward_share(vault: Vault) -> float | None:
    """Percent of the total APY paid as rewards, when both are known and the APY is positive."""
    if vault.apy is None or vault.apy_reward is None or vault.apy <= 0:
        return None
    return round(100.0 * vault.apy_reward / vault.apy, 4)


def document(vault: Vault) -> dict[str, Any]:
    """The index document of a vault (None values omitted)."""
    inputs = vault.security_inputs
    doc: dict[str, Any] = {
        "id": vault.id,
        "name": vault.name,
        "source": vault.source,
        "protocol": vault.protocol,
        "chain": vault.chain,
        "address": vault.address,
        "asset_symbols": list(vault.asset_symbols),
        "underlying_tokens": list(vault.underlying_tokens),
        "stablecoin": vault.stablecoin,
        "il_risk": vault.il_risk,
        "exposure": vault.exposure,
        "risk_rating": vault.risk_rating,
        "status": vault.status,
        "source_flags": list(inputs.source_flags) if inputs else [],
        "apy": vault.apy,
        "apy_base": vault.apy_base,
        "apy_reward": vault.apy_reward,
        "reward_share": reward_share(vault),
        "tvl_usd": vault.tvl_usd,
        "share_price": vault.share_price,
        "security_score": vault.security_score,
        "protocol_age_days": inputs.protocol_age_days if inputs else None,
        "audits": inputs.audits if inputs else None,
        "exploits": inputs.exploits if inputs else None,
        "url": vault.url,
        "updated_at": vault.updated_at,
    }
    return {k: v for k, v in doc.items() if v is not None}


def sample_of(vaults: list[Vault], size: int = SAMPLE_SIZE) -> list[dict[str, Any]]:
    """An evenly spread, deterministic sample of compared values (vaults sorted by id)."""
    if not vaults:
        return []
    step = max(len(vaults) // size, 1)
    picked = vaults[::step][:size]
    return [{"id": v.id, **{f: getattr(v, f) for f in SAMPLE_FIELDS}} for v in picked]


def _batches(vaults: Iterator[Vault], size: int) -> Iterator[list[Vault]]:
    batch: list[Vault] = []
    for vault in vaults:
        batch.append(vault)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


async def publish(
    store: VaultStore,
    client: TypesenseClient,
    *,
    collection: str = COLLECTION,
    run_id: str | None = None,
    batch_size: int = BATCH_SIZE,
) -> Publication:
    """Push the whole write store to the index and record the publication.

    Import refusals do not raise: they are recorded as the publication's error (and the
    staleness check will then see the gap). Typesense being unreachable does raise.
    """
    fingerprint = store.fingerprint()
    await ensure_schema(client, collection)
    seq = time.time_ns() // 1000
    pushed: list[Vault] = []
    failures: list[str] = []
    for batch in _batches(store.iter_vaults(), batch_size):
        docs = [{**document(v), "publish_seq": seq} for v in batch]
        summary = await client.import_documents(collection, docs, action="upsert")
        refused = {f.line for f in summary.failures}
        pushed.extend(v for i, v in enumerate(batch) if i not in refused)
        failures.extend(f"{batch[f.line].id}: {f.error}" for f in summary.failures[:5])
    try:
        await client.delete_documents(collection, f"publish_seq:<{seq}")
    except TypesenseError as exc:
        if exc.status != 404:
            raise
    info = await client.retrieve_collection(collection)
    error = None
    if failures:
        error = f"{len(failures)}+ documents refused: " + "; ".join(failures[:5])
    publication = Publication(
        run_id=run_id,
        collection=collection,
        published_at=time.time(),
        count=info.num_documents,
        newest_updated_at=max((v.updated_at for v in pushed), default=None),
        revision=fingerprint.revision,
        checksum=fingerprint.checksum,
        sample=sample_of(pushed),
        error=error,
    )
    return store.record_publication(publication)
