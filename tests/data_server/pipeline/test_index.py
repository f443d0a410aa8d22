"""The `vaults` collection: schema, documents, and what publish leaves in the index."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import from_json

from albert.search.typesense_client import SearchParams, TypesenseClient, TypesenseError
from data_server.pipeline import offline_processors, run_pipeline
from data_server.store import VaultStore
from data_server.vaults.index import (
    DISPLAY_FIELDS,
    SAMPLE_FIELDS,
    DocumentBatch,
    Publisher,
    collection_schema,
    display_fields,
    display_fields_of_json,
    document,
    encode_records,
    encode_vaults,
    ensure_schema,
    publish,
    record_document,
    vault_document,
)
from data_server.vaults.model import SecurityInputs, Vault
from tests.data_server.pipeline.conftest import http_client


def _vault(native: str, **extra: object) -> Vault:
    fields: dict[str, object] = {
        "id": f"beefy:base:{native}",
        "source": "beefy",
        "name": f"{native} vault",
        "protocol": "beefy",
        "chain": "base",
        "asset_symbols": ["USDC", "WETH"],
        "updated_at": 1_787_184_000,
    }
    fields.update(extra)
    return Vault.model_validate(fields)


def test_schema_indexes_what_the_tools_query_and_stores_the_rest() -> None:
    fields = {f["name"]: f for f in collection_schema("v")["fields"]}
    # Filtered, sorted or searched by the MCP tools (data_server/mcp_server/).
    queried = (
        "name", "source", "protocol", "chain", "asset_symbols", "underlying_tokens", "stablecoin",
        "il_risk", "exposure", "risk_rating", "status", "apy", "apy_base", "reward_share",
        "tvl_usd", "security_score", "protocol_age_days", "audits", "updated_at", "publish_seq",
    )  # fmt: skip
    for name in queried:
        assert fields[name].get("index", True) is True, name
    # Only displayed: kept in the store by publish, not in the documents.
    for name in DISPLAY_FIELDS:
        assert name not in fields, name
    # Vaults per chain (the known-chain check) and per source; nothing else is faceted.
    assert [n for n, f in fields.items() if f.get("facet")] == ["source", "chain"]
    numeric = ("apy", "apy_base", "tvl_usd", "security_score", "reward_share")
    for name in (*numeric, "protocol_age_days", "audits", "updated_at"):
        assert fields[name]["type"] in ("float", "int32", "int64"), name


def test_document_flattens_security_inputs_and_omits_unknowns() -> None:
    inputs = SecurityInputs(
        audits=2, protocol_age_days=400, chain="base", il_risk=True, exposure="multi",
        source_flags=["beefy:complex"],
    )  # fmt: skip
    doc = document(_vault("a", apy=10.0, apy_reward=2.5, security_inputs=inputs))
    assert doc["id"] == "beefy:base:a"
    assert doc["reward_share"] == 25.0
    assert (doc["audits"], doc["protocol_age_days"], doc["exploits"]) == (2, 400, 0)
    assert doc["source_flags"] == ["beefy:complex"]
    assert "tvl_usd" not in doc and "address" not in doc
    assert "reward_share" not in document(_vault("b", apy=0.0, apy_reward=0.0))


async def test_publish_removes_documents_the_store_does_not_have(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    await ensure_schema(index_client, collection)
    stray = {**document(_vault("stray")), "publish_seq": 1}
    await index_client.import_documents(collection, [stray])
    store.upsert_vaults([_vault("a", apy=4.0), _vault("b", apy=12.0, tvl_usd=5e6)])
    publication = await publish(store, index_client, collection=collection)
    assert publication.count == 2 and publication.error is None
    assert publication.checksum == store.fingerprint().checksum
    assert {s["id"] for s in publication.sample} == {"beefy:base:a", "beefy:base:b"}
    result = await index_client.search(
        collection, SearchParams(q="*", sort_by="apy:desc", filter_by="apy:>5")
    )
    assert [h.document["id"] for h in result.hits] == ["beefy:base:b"]


async def test_publish_recreates_a_collection_with_an_old_schema(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    await index_client.create_collection(
        {"name": collection, "fields": [{"name": "name", "type": "string"}]}
    )
    store.upsert_vaults([_vault("a")])
    publication = await publish(store, index_client, collection=collection)
    assert publication.count == 1
    info = await index_client.retrieve_collection(collection)
    assert {f["name"] for f in info.fields} >= {"publish_seq", "risk_rating", "apy"}
    assert await ensure_schema(index_client, collection) is False


async def test_documents_from_stored_records_equal_documents_from_vaults(
    store: VaultStore,
) -> None:
    async with http_client() as http:
        await run_pipeline(offline_processors(), store, None, http=http)
    records = store.records(limit=100_000)
    assert len(records) > 4000
    for _, record in records:
        assert record_document(json.loads(record)) == document(Vault.model_validate_json(record))
    # The pipeline encodes documents from the vaults it writes: the same bytes.
    vaults = [Vault.model_validate_json(record) for _, record in records]
    stored = store.published_records(v.id for v in vaults)
    revisions = {vault_id: revision for vault_id, _, revision in stored}
    from_vaults, from_records = encode_vaults(vaults, 7, revisions), encode_records(stored, 7)
    assert from_vaults.body == from_records.body
    assert from_vaults.compared == from_records.compared
    assert from_vaults.revisions == from_records.revisions == [r for _, _, r in stored]
    # What is sent and the display fields read back make the whole document, nothing twice.
    for line, (_, record, revision) in zip(from_vaults.body.split(b"\n"), stored, strict=True):
        sent = json.loads(line)
        assert not sent.keys() & set(DISPLAY_FIELDS)
        shown = display_fields(json.loads(record))
        full = record_document(json.loads(record))
        full.update(publish_seq=7, revision=revision)
        assert {"source_flags": [], **shown, **sent} == full


def test_documents_from_vaults_leave_out_what_json_stores_as_null() -> None:
    inputs = SecurityInputs(chain="base", il_risk=False, exposure="single", audits=2)
    odd = [
        _vault("inf", apy=float("inf"), apy_reward=1.0, tvl_usd=float("nan")),
        _vault("neg", apy=-0.0, apy_base=-1e308, share_price=float("-inf"), address="0xab"),
        _vault("scored", security_inputs=inputs, security_score=55.5, risk_rating="medium"),
        _vault("plain", apy=12.5, apy_reward=2.5, url="https://example.org/ü", status="eol"),
    ]
    records = [(v.id, v.model_dump_json(), 3) for v in odd]
    revisions = dict.fromkeys((v.id for v in odd), 3)
    assert encode_vaults(odd, 1, revisions).body == encode_records(records, 1).body
    assert display_fields(json.loads(records[1][1])) == {"address": "0xab"}
    assert "apy" not in vault_document(odd[0]) and "tvl_usd" not in vault_document(odd[0])
    compared = encode_vaults(odd, 1, revisions).compared
    assert all(row.keys() == {"id", *SAMPLE_FIELDS} for row in compared)
    assert compared[3]["apy"] == 12.5 and compared[0]["apy"] is None


async def test_publish_in_many_batches_pushes_every_vault_once(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    vaults = [_vault(f"v{i:02d}", apy=float(i), updated_at=1_787_184_000 + i) for i in range(11)]
    store.upsert_vaults(vaults)
    publication = await publish(store, index_client, collection=collection, batch_size=3)
    assert publication.count == 11 and publication.error is None
    assert publication.newest_updated_at == 1_787_184_010
    assert [s["id"] for s in publication.sample] == [v.id for v in vaults]
    assert publication.sample[4] == {
        "id": "beefy:base:v04", "apy": 4.0, "apy_base": None, "apy_reward": None,
        "tvl_usd": None, "security_score": None, "updated_at": 1_787_184_004,
    }  # fmt: skip
    found = await index_client.search(collection, SearchParams(q="*", per_page=50))
    assert sorted(h.document["id"] for h in found.hits) == [v.id for v in vaults]


async def test_publish_maps_refusals_to_vaults_across_batches(store: VaultStore) -> None:
    store.upsert_vaults([_vault(f"v{i}") for i in range(5)])
    imported: list[list[str]] = []

    def typesense(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path.endswith("/collections/vaults"):
            fields = collection_schema("vaults")["fields"]
            return httpx.Response(
                200, json={"name": "vaults", "num_documents": 4, "fields": fields}
            )
        if path.endswith("/documents/import"):
            ids = [json.loads(line)["id"] for line in request.content.split(b"\n")]
            imported.append(ids)
            lines = [
                '{"success":false,"error":"refused","document":"{}"}'
                if i.endswith("v3")
                else '{"success":true}'
                for i in ids
            ]
            return httpx.Response(200, text="\n".join(lines))
        if request.method == "DELETE":
            return httpx.Response(200, json={"num_deleted": 0})
        return httpx.Response(404, json={"message": "not found"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(typesense)) as http:
        client = TypesenseClient("http://typesense.test", "k", http=http)
        publication = await publish(store, client, collection="vaults", batch_size=2)
    assert imported == [
        ["beefy:base:v0", "beefy:base:v1"],
        ["beefy:base:v2", "beefy:base:v3"],
        ["beefy:base:v4"],
    ]
    assert publication.error == "1+ documents refused: beefy:base:v3: refused"
    assert [s["id"] for s in publication.sample] == [
        "beefy:base:v0", "beefy:base:v1", "beefy:base:v2", "beefy:base:v4",
    ]  # fmt: skip


def _fake_typesense(
    imported: list[list[str]], deleted: list[str], *, failing_import: int | None = None
) -> httpx.MockTransport:
    """A Typesense API on a mock transport; the `failing_import`-th import answers 503."""

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path.endswith("/collections/vaults"):
            fields = collection_schema("vaults")["fields"]
            return httpx.Response(
                200, json={"name": "vaults", "num_documents": 0, "fields": fields}
            )
        if path.endswith("/documents/import"):
            imported.append([json.loads(line)["id"] for line in request.content.split(b"\n")])
            if len(imported) == failing_import:
                return httpx.Response(503, json={"message": "Not Ready or Lagging"})
            return httpx.Response(200, text="\n".join('{"success":true}' for _ in imported[-1]))
        if request.method == "DELETE":
            deleted.append(str(request.url.params.get("filter_by")))
            return httpx.Response(200, json={"num_deleted": 0})
        return httpx.Response(404, json={"message": "not found"})

    return httpx.MockTransport(handler)


def _slice(publisher: Publisher, store: VaultStore, vaults: list[Vault]) -> DocumentBatch:
    store.upsert_vaults(vaults)
    return encode_records(store.published_records(v.id for v in vaults), publisher.seq)


async def test_a_publisher_sends_pushed_slices_once_and_the_rest_of_the_store_at_finish(
    store: VaultStore,
) -> None:
    store.upsert_vaults([_vault("old-a"), _vault("old-b")])  # from earlier runs
    imported: list[list[str]] = []
    deleted: list[str] = []
    async with httpx.AsyncClient(transport=_fake_typesense(imported, deleted)) as http:
        client = TypesenseClient("http://typesense.test", "k", http=http)
        publisher = Publisher(store, client, collection="vaults", batch_size=2)
        assert not publisher.started
        await publisher.push(_slice(publisher, store, [_vault("n1"), _vault("n2")]))
        await publisher.push(_slice(publisher, store, [_vault("n3")]))
        assert publisher.started
        publication = await publisher.finish()
    assert imported == [
        ["beefy:base:n1", "beefy:base:n2"],
        ["beefy:base:n3"],
        ["beefy:base:old-a", "beefy:base:old-b"],
    ]
    assert deleted == [f"publish_seq:<{publisher.seq}"]
    assert publication.error is None
    # The sample and the newest time are those of a publish of the whole store at once.
    assert [s["id"] for s in publication.sample] == sorted(i for batch in imported for i in batch)
    assert publication.checksum == store.fingerprint().checksum


async def test_a_failed_import_stops_the_publish_and_removes_nothing(store: VaultStore) -> None:
    imported: list[list[str]] = []
    deleted: list[str] = []
    transport = _fake_typesense(imported, deleted, failing_import=2)
    async with httpx.AsyncClient(transport=transport) as http:
        client = TypesenseClient("http://typesense.test", "k", http=http)
        publisher = Publisher(store, client, collection="vaults", queue_size=1)
        # Pushing goes on after the failure (the merge does not wait on a dead index)...
        for i in range(6):
            await publisher.push(_slice(publisher, store, [_vault(f"v{i}")]))
        with pytest.raises(TypesenseError, match="Not Ready"):
            await publisher.finish()
    # ...but nothing is sent after the failed import, and nothing is removed.
    assert len(imported) == 2
    sent = [vault_id for request in imported for vault_id in request]
    assert sent == [f"beefy:base:v{i}" for i in range(len(sent))]
    assert deleted == []
    assert store.last_publication("vaults") is None


async def test_slices_waiting_for_an_import_go_out_together_up_to_the_batch_size(
    store: VaultStore,
) -> None:
    imported: list[list[str]] = []
    deleted: list[str] = []
    async with httpx.AsyncClient(transport=_fake_typesense(imported, deleted)) as http:
        client = TypesenseClient("http://typesense.test", "k", http=http)
        publisher = Publisher(store, client, collection="vaults", batch_size=3)
        # Queued before the importer first runs: they wait together.
        for i in range(4):
            await publisher.push(_slice(publisher, store, [_vault(f"v{i}")]))
        publication = await publisher.finish()
    assert imported == [["beefy:base:v0", "beefy:base:v1", "beefy:base:v2"], ["beefy:base:v3"]]
    assert publication.error is None and len(publication.sample) == 4


_json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_display_keys = st.sampled_from(
    ["address", "url", "apy_reward", "share_price", "security_inputs", "name", "apy"]
)
_inputs = (
    st.none()
    | _json_value
    | st.dictionaries(
        st.sampled_from(["exploits", "source_flags", "audits"]) | st.text(max_size=3), _json_value
    )
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(_display_keys | st.text(max_size=5), _json_value, max_size=8),
    _inputs,
    st.booleans(),
)
def test_display_fields_of_json_reads_what_the_whole_record_gives(
    record: dict[str, Any], inputs: Any, with_inputs: bool
) -> None:
    if with_inputs:
        record["security_inputs"] = inputs
    encoded = json.dumps(record)
    read, whole = _outcome(display_fields_of_json, encoded), _outcome(_whole, encoded)
    assert read == whole
    assert json.dumps(read) == json.dumps(whole)  # the same types (1 vs 1.0) and order


def _whole(encoded: str) -> dict[str, Any]:
    return display_fields(from_json(encoded))


def _outcome(read: Any, encoded: str) -> Any:
    try:
        return read(encoded)
    except Exception as exc:  # a record of no vault's shape: the same failure
        return type(exc).__name__


def test_display_fields_of_json_of_stored_records() -> None:
    vault = Vault(
        id="v1",
        source="defillama",
        name="USDC",
        protocol="aave-v3",
        chain="base",
        address="0xab",
        apy=4.25,
        apy_reward=1.0,
        share_price=1.0003,
        url="https://x",
        updated_at=1,
        security_inputs=SecurityInputs(
            exploits=2, source_flags=["outlier_apy"], chain="base", il_risk=False, exposure="single"
        ),
    )
    encoded = vault.model_dump_json()
    assert display_fields_of_json(encoded) == display_fields(from_json(encoded))
    assert display_fields_of_json(encoded.encode()) == {
        "address": "0xab",
        "url": "https://x",
        "apy_reward": 1.0,
        "share_price": 1.0003,
        "exploits": 2,
        "source_flags": ["outlier_apy"],
    }
    with pytest.raises(ValueError):
        display_fields_of_json("{not json")
