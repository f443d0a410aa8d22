"""Hits take their display fields from their own document's publish, whatever the store
holds now, and a search still answers when those fields cannot be read."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from albert.search.typesense_client import TypesenseClient
from data_server.mcp_server.vault_index import VaultIndex
from data_server.store import VaultStore
from data_server.vaults.index import (
    Publisher,
    encode_vaults,
    ensure_schema,
    publish,
    with_display,
)
from data_server.vaults.model import SecurityInputs, Vault


@pytest.fixture
def store(tmp_path: Path) -> Iterator[VaultStore]:
    with VaultStore(tmp_path / "store.db") as opened:
        yield opened


def _vault(native: str, version: str, apy_reward: float) -> Vault:
    return Vault(
        id=f"beefy:base:{native}",
        source="beefy",
        name=f"{native} vault",
        protocol="beefy",
        chain="base",
        address=f"0x{native}{version}",
        asset_symbols=["USDC"],
        apy=10.0 + apy_reward,
        apy_reward=apy_reward,
        tvl_usd=1e6,
        share_price=1.0 + apy_reward,
        security_inputs=SecurityInputs(
            chain="base",
            il_risk=False,
            exposure="single",
            exploits=int(apy_reward),
            source_flags=[f"flag-{version}"],
        ),
        url=f"https://example.org/{native}/{version}",
        updated_at=1_787_184_000,
    )


SHOWN = ("apy", "apy_reward", "address", "url", "share_price", "exploits", "source_flags")


def _shown(hit: object) -> tuple[object, ...]:
    return tuple(getattr(hit, name) for name in SHOWN)


def _expected(vault: Vault) -> tuple[object, ...]:
    assert vault.security_inputs is not None
    inputs = vault.security_inputs
    return (
        vault.apy, vault.apy_reward, vault.address, vault.url, vault.share_price,
        inputs.exploits, inputs.source_flags,
    )  # fmt: skip


async def test_after_a_failed_publish_each_hit_shows_its_own_publishes_values(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    old_a, old_b = _vault("a", "old", 1.0), _vault("b", "old", 2.0)
    store.upsert_vaults([old_a, old_b])
    await publish(store, index_client, collection=collection)
    # The next run commits new values of both; its publish imports `a` and then fails.
    new_a, new_b = _vault("a", "new", 3.0), _vault("b", "new", 4.0)
    publisher = Publisher(store, index_client, collection=collection)
    for vault in (new_a, new_b):
        rows: dict[str, int] = {}
        store.upsert_vaults([vault], row_revisions=rows)
        if vault is new_a:
            batch = encode_vaults([vault], publisher.seq, rows)
            await index_client.import_jsonl(collection, batch.body, "upsert")
    index = VaultIndex(index_client, collection, display=store)
    page, _ = await index.search(sort_by="apy:asc")
    assert [_shown(hit) for hit in page.hits] == [_expected(old_b), _expected(new_a)]
    fetched = await index.get_many([old_a.id, old_b.id])
    assert _shown(fetched[old_b.id]) == _expected(old_b)
    assert _shown(fetched[new_a.id]) == _expected(new_a)
    # The wallet reader's catalog reads addresses the same way.
    catalog = await index.vaults_with_addresses("base")
    assert sorted(v.address or "" for v in catalog) == ["0xanew", "0xbold"]
    # The pipeline's check reads a document's display fields through the same reader.
    docs = [await index_client.get_document(collection, v.id) for v in (old_a, old_b)]
    shown = {doc["id"]: _shown(_Fields(doc)) for doc in with_display(docs, store)}
    assert shown == {new_a.id: _expected(new_a), old_b.id: _expected(old_b)}

    # The store kept the replaced rows; a publish that succeeds shows the store, and drops
    # the replaced rows no document refers to any more.
    assert _superseded(store) == [old_a.id, old_b.id]
    await publish(store, index_client, collection=collection)
    page, _ = await index.search(sort_by="apy:asc")
    assert [_shown(hit) for hit in page.hits] == [_expected(new_a), _expected(new_b)]
    assert _superseded(store) == []


class _Fields:
    """A document's fields as attributes, as `_shown` reads a hit's."""

    def __init__(self, doc: dict[str, object]) -> None:
        self.__dict__.update(doc)


def _superseded(store: VaultStore) -> list[str]:
    with sqlite3.connect(store.path) as conn:
        return [r[0] for r in conn.execute("SELECT vault_id FROM superseded_records ORDER BY 1")]


async def test_documents_that_carry_their_display_fields_keep_them(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    # A document of a publish from before the display fields left the index.
    await ensure_schema(index_client, collection)
    fat = {
        "id": "beefy:base:fat", "name": "fat vault", "source": "beefy", "protocol": "beefy",
        "chain": "base", "address": "0xfat", "asset_symbols": ["USDC"], "stablecoin": True,
        "il_risk": False, "exposure": "single", "status": "active", "source_flags": ["x"],
        "apy": 5.0, "apy_reward": 1.0, "reward_share": 20.0, "share_price": 1.5,
        "exploits": 1, "url": "https://example.org/fat", "updated_at": 1, "publish_seq": 1,
    }  # fmt: skip
    await index_client.import_jsonl(collection, json.dumps(fat).encode(), "upsert")
    index = VaultIndex(index_client, collection, display=store)
    hit = await index.get("beefy:base:fat")
    assert hit is not None
    assert (hit.address, hit.url, hit.apy_reward, hit.share_price, hit.exploits) == (
        "0xfat", "https://example.org/fat", 1.0, 1.5, 1,
    )  # fmt: skip
    assert hit.source_flags == ["x"]


async def test_a_failed_display_read_answers_without_those_fields(
    store: VaultStore,
    index_client: TypesenseClient,
    collection: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    vault = _vault("a", "v1", 1.0)
    store.upsert_vaults([vault])
    await publish(store, index_client, collection=collection)
    # The fault: the store cannot answer the read (a table it reads is gone).
    with sqlite3.connect(store.path) as conn:
        conn.execute("DROP TABLE superseded_records")
    index = VaultIndex(index_client, collection, display=store)
    with caplog.at_level(logging.WARNING, logger="data_server.mcp_server.vault_index"):
        page, _ = await index.search(q="a vault")
    assert page.found == 1
    (hit,) = page.hits
    assert (hit.id, hit.apy, hit.tvl_usd, hit.reward_share) == (vault.id, 11.0, 1e6, 9.0909)
    assert (hit.address, hit.url, hit.apy_reward, hit.share_price, hit.exploits) == (
        None, None, None, None, None,
    )  # fmt: skip
    assert hit.source_flags == []
    assert "display fields not read" in caplog.text
