"""The Typesense ``vaults`` collection: its schema, the document of a vault, and publish.

Documents are the flattened :class:`~data_server.vaults.model.Vault` (document id = vault id)
plus fields derived for filtering and sorting: ``reward_share`` (percent of the APY paid as
rewards) and the security inputs ``audits``, ``protocol_age_days``, ``exploits`` and
``source_flags``. Unknown values are left out of a document rather than sent as null, so
numeric filters such as ``apy:>5`` never match a vault whose APY is unknown.

``publish`` pushes every stored vault (upsert), removes documents of earlier publishes
that the store no longer has, and records what it published in the run log. It reads the
stored records as JSON (validated when they were written) and encodes documents with
pydantic-core's JSON writer, in batches that overlap with the import of the previous one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json, to_json

from albert.search.typesense_client import ImportSummary, TypesenseClient, TypesenseError
from data_server.store import Publication, VaultStore
from data_server.vaults.model import Vault

COLLECTION = "vaults"
# Documents per import request: large enough that requests are few, small enough that the
# first batch (encoded before anything overlaps) is short and memory stays bounded.
BATCH_SIZE = 2500
SAMPLE_SIZE = 20

# Fields whose published values the staleness check compares with the store.
SAMPLE_FIELDS = ("apy", "apy_base", "apy_reward", "tvl_usd", "security_score", "updated_at")


def _field(name: str, type_: str, **options: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **options}


def collection_schema(name: str = COLLECTION) -> dict[str, Any]:
    """The explicit schema of the vaults collection.

    Typesense indexes only what the tools query: fields they filter, sort or search on.
    Fields the tools only read back (``address``, ``apy_reward``, ``share_price``,
    ``exploits``, ``source_flags``, ``url``) are stored, not indexed. Facets are ``chain``
    (the known-chain check counts vaults per chain) and ``source`` (what each source has in
    the index); strings filter without one. Indexing a field costs Typesense CPU on every
    publish.
    """
    optional = {"optional": True}
    stored = {"index": False, "optional": True}
    return {
        "name": name,
        "fields": [
            _field("name", "string"),
            _field("source", "string", facet=True),
            _field("protocol", "string"),
            _field("chain", "string", facet=True),
            _field("address", "string", **stored),
            _field("asset_symbols", "string[]"),
            _field("underlying_tokens", "string[]", **optional),
            _field("stablecoin", "bool"),
            _field("il_risk", "bool"),
            _field("exposure", "string"),
            _field("risk_rating", "string", **optional),
            _field("status", "string"),
            _field("source_flags", "string[]", **stored),
            _field("apy", "float", **optional),
            _field("apy_base", "float", **optional),
            _field("apy_reward", "float", **stored),
            _field("reward_share", "float", **optional),
            _field("tvl_usd", "float", **optional),
            _field("share_price", "float", **stored),
            _field("security_score", "float", **optional),
            _field("protocol_age_days", "int32", **optional),
            _field("audits", "int32", **optional),
            _field("exploits", "int32", **stored),
            _field("url", "string", **stored),
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
    return _reward_share(vault.apy, vault.apy_reward)


def _reward_share(apy: float | None, apy_reward: float | None) -> float | None:
    if apy is None or apy_reward is None or apy <= 0:
        return None
    return round(100.0 * apy_reward / apy, 4)


def document(vault: Vault) -> dict[str, Any]:
    """The index document of a vault (None values omitted)."""
    return record_document(vault.model_dump())


def record_document(record: Mapping[str, Any]) -> dict[str, Any]:
    """The index document of a vault in its stored JSON form (None values omitted).

    The publish reads stored records, which were validated when written, so it builds
    documents from their parsed JSON without a model per row.
    """
    inputs = record.get("security_inputs") or {}
    apy, apy_reward = record.get("apy"), record.get("apy_reward")
    doc: dict[str, Any] = {
        "id": record["id"],
        "name": record["name"],
        "source": record["source"],
        "protocol": record["protocol"],
        "chain": record["chain"],
        "address": record.get("address"),
        "asset_symbols": list(record.get("asset_symbols") or []),
        "underlying_tokens": list(record.get("underlying_tokens") or []),
        "stablecoin": record.get("stablecoin", False),
        "il_risk": record.get("il_risk", False),
        "exposure": record.get("exposure", "single"),
        "risk_rating": record.get("risk_rating"),
        "status": record.get("status", "active"),
        "source_flags": list(inputs.get("source_flags") or []),
        "apy": apy,
        "apy_base": record.get("apy_base"),
        "apy_reward": apy_reward,
        "reward_share": _reward_share(apy, apy_reward),
        "tvl_usd": record.get("tvl_usd"),
        "share_price": record.get("share_price"),
        "security_score": record.get("security_score"),
        "protocol_age_days": inputs.get("protocol_age_days"),
        "audits": inputs.get("audits"),
        "exploits": inputs.get("exploits"),
        "url": record.get("url"),
        "updated_at": record["updated_at"],
    }
    return {k: v for k, v in doc.items() if v is not None}


def _spread(rows: list[dict[str, Any]], size: int = SAMPLE_SIZE) -> list[dict[str, Any]]:
    if not rows:
        return []
    step = max(len(rows) // size, 1)
    return rows[::step][:size]


@dataclass
class _Batch:
    """One import request's worth of stored vaults, encoded."""

    body: bytes
    last_id: str
    # Per document: its id and the values the staleness check compares (None when absent).
    compared: list[dict[str, Any]]


def _encode_batch(store: VaultStore, after_id: str | None, size: int, seq: int) -> _Batch | None:
    """The next `size` stored vaults after `after_id` as JSONL documents (None at the end)."""
    records = store.records(after_id=after_id, limit=size)
    if not records:
        return None
    lines: list[bytes] = []
    compared: list[dict[str, Any]] = []
    for _, record in records:
        doc = record_document(from_json(record))
        doc["publish_seq"] = seq
        lines.append(to_json(doc))
        compared.append({"id": doc["id"], **{f: doc.get(f) for f in SAMPLE_FIELDS}})
    return _Batch(body=b"\n".join(lines), last_id=records[-1][0], compared=compared)


async def publish(
    store: VaultStore,
    client: TypesenseClient,
    *,
    collection: str = COLLECTION,
    run_id: str | None = None,
    batch_size: int = BATCH_SIZE,
) -> Publication:
    """Push the whole write store to the index and record the publication.

    Batches are encoded in a worker thread while the previous one is being indexed, so
    building documents overlaps with Typesense's own work. Import refusals do not raise:
    they are recorded as the publication's error (and the staleness check will then see
    the gap). Typesense being unreachable does raise.
    """
    # The store's checksum (a read of every row) is taken while the schema is checked.
    fingerprint, _ = await asyncio.gather(
        asyncio.to_thread(store.fingerprint), ensure_schema(client, collection)
    )
    seq = time.time_ns() // 1000
    pushed: list[dict[str, Any]] = []
    failures: list[str] = []

    def settle(batch: _Batch, summary: ImportSummary) -> None:
        refused = {f.line for f in summary.failures}
        pushed.extend(row for i, row in enumerate(batch.compared) if i not in refused)
        failures.extend(f"{batch.compared[f.line]['id']}: {f.error}" for f in summary.failures[:5])

    in_flight: tuple[_Batch, asyncio.Task[ImportSummary]] | None = None
    after: str | None = None
    try:
        while True:
            batch = await asyncio.to_thread(_encode_batch, store, after, batch_size, seq)
            if in_flight is not None:
                settle(in_flight[0], await in_flight[1])
                in_flight = None
            if batch is None:
                break
            after = batch.last_id
            task = asyncio.create_task(client.import_jsonl(collection, batch.body, "upsert"))
            in_flight = (batch, task)
    finally:
        # Encoding failed (or we were cancelled) with an import still running: stop it.
        if in_flight is not None and not in_flight[1].done():
            in_flight[1].cancel()
            await asyncio.wait({in_flight[1]})
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
        newest_updated_at=max((row["updated_at"] for row in pushed), default=None),
        revision=fingerprint.revision,
        checksum=fingerprint.checksum,
        sample=_spread(pushed),
        error=error,
    )
    return store.record_publication(publication)
