"""Seed documents for the tokens collection: derivations, schema fit, idempotent loading."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from albert.search.typesense_client import SearchParams, TypesenseClient
from albert.tools.token_search.query import Chain
from data_server.market import load_market_snapshot
from data_server.tokens.authenticity import MarketFacts, authenticity_score
from data_server.tokens.schema import UNRANKED, field_types, tokens_schema
from data_server.tokens.seed import FIXTURES, TokenDocument, build_token_documents, seed_tokens
from tests.typesense_fixture import TypesenseServer, unique_name


def _by_id() -> dict[str, TokenDocument]:
    return {d.id: d for d in build_token_documents()}


def test_one_document_per_deployment_plus_dex_pairs() -> None:
    listings = load_market_snapshot().listings
    pairs = json.loads((FIXTURES / "pairs_response_solana_raydium_7xck.json").read_text())["pairs"]
    docs = build_token_documents()
    assert len(docs) == sum(len(c.deployments) for c in listings.values()) + len(pairs)
    assert len({d.id for d in docs}) == len(docs)
    assert build_token_documents() == docs  # deterministic


def test_document_fields_match_the_schema() -> None:
    types = field_types()
    assert set(TokenDocument.model_fields) == set(types)
    python_types = {"string": str, "int32": int, "int64": int, "float": float, "bool": bool}
    for doc in build_token_documents():
        for key, value in doc.to_index().items():
            assert isinstance(value, python_types[types[key]]), (doc.id, key, value)
            if types[key] == "int32":
                assert -(2**31) <= value < 2**31
    optional = {f["name"] for f in tokens_schema()["fields"] if f.get("optional")}
    required = set(types) - optional - {"id"}
    for doc in build_token_documents():
        assert required <= set(doc.to_index()), doc.id


def test_chains_are_ones_the_query_accepts() -> None:
    assert {d.chain for d in build_token_documents()} <= {c.value for c in Chain}


def test_values_come_from_the_recordings() -> None:
    docs = _by_id()
    btc = docs["bitcoin:native"]
    # The 2025 row wins over the 2023 one for coins present in both files.
    assert btc.marketcap == 1742757433521 and btc.rank == 1
    assert btc.as_of == 1767050117  # 2025-12-29T23:15:17Z
    assert btc.vol_mcap_ratio == pytest.approx(53395005334 / 1742757433521)
    usdc_base = docs["base:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"]
    # USDC's newest row is the 2024 one (the 2025 file has no stablecoins).
    assert usdc_base.stablecoin and usdc_base.symbol == "USDC" and usdc_base.rank == 6
    assert usdc_base.marketcap == 34530711832 and usdc_base.as_of == 1723735274
    assert usdc_base.address == "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    assert usdc_base.price_change_1h is None  # the 2024 rows have no 1h change
    wood = docs["solana:Ao3fKu6s2jH2vFHLWUchgf4mPWQ7G4FEttHa1xXv7Wio"]
    assert wood.rank == UNRANKED and wood.marketcap is None and wood.vol_mcap_ratio is None
    assert wood.liquidity == 254.49 and wood.volume_24h == 73.23
    assert wood.price_change_1h == -33.53 and wood.source == "dexscreener"
    assert {d.symbol for d in docs.values() if d.stablecoin} == {"USDT", "USDC", "DAI"}
    # Nothing claims holder counts: no recording has them.
    assert all(d.holders is None for d in docs.values())
    assert all(d.authenticity_method == "heuristic-v1" for d in docs.values())


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (MarketFacts(), 35),  # unranked, nothing else known
        (MarketFacts(rank=1, marketcap=2e12, fdv=2e12, volume_24h=5e10), 98),
        (MarketFacts(rank=40, marketcap=3e9, fdv=1e10, volume_24h=1e9), 50 + 18 + 6 + 8 - 5),
        (MarketFacts(rank=500, marketcap=5e7, volume_24h=1e4), 50 + 2 - 8),
        (MarketFacts(rank=250, marketcap=2e8, volume_24h=5e8), 50 + 6 + 3 - 12),
        (MarketFacts(rank=5000), 50),
        (MarketFacts(liquidity=254.49, trades_24h=8, fdv=721, volume_24h=73.23), 10),
        (MarketFacts(liquidity=1e6, trades_24h=5000), 35),
        (MarketFacts(rank=None, liquidity=1.0, trades_24h=0, marketcap=1.0, volume_24h=100), 0),
    ],
)
def test_authenticity_heuristic(facts: MarketFacts, expected: int) -> None:
    assert authenticity_score(facts) == expected


@pytest.fixture
async def client(typesense_server: TypesenseServer) -> AsyncIterator[TypesenseClient]:
    async with TypesenseClient(typesense_server.url, typesense_server.api_key) as c:
        yield c


async def test_seed_is_idempotent(client: TypesenseClient) -> None:
    name = unique_name("tokens_seed")
    first = await seed_tokens(client, name)
    assert first.imported.all_ok
    assert first.num_documents == first.documents == len(build_token_documents())
    second = await seed_tokens(client, name)
    assert second.num_documents == first.num_documents
    info = await client.retrieve_collection(name)
    assert info.default_sorting_field == "rank"
    # Typesense orders by the default sorting field *descending* when no sort_by is given,
    # which is why the compiler always sends one.
    top = await client.search(name, SearchParams(q="*", query_by="symbol,name", per_page=1))
    assert top.hits[0].document["symbol"] == "WOOD"
    top = await client.search(
        name, SearchParams(q="*", query_by="symbol,name", per_page=1, sort_by="rank:asc")
    )
    assert top.hits[0].document["symbol"] == "BTC"
    await client.drop_collection(name)


async def test_seed_refuses_an_incompatible_collection(client: TypesenseClient) -> None:
    name = unique_name("tokens_bad")
    await client.create_collection({"name": name, "fields": [{"name": "rank", "type": "string"}]})
    with pytest.raises(RuntimeError, match="refused"):
        await seed_tokens(client, name)
    await client.drop_collection(name)


def test_seed_command(
    typesense_server: TypesenseServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from data_server.tokens.__main__ import main

    name = unique_name("tokens_cli")
    argv = ["--url", typesense_server.url, "--api-key", typesense_server.api_key]
    assert main([*argv, "--collection", name]) == 0
    count = len(build_token_documents())
    assert (
        f"{name}: {count} documents upserted, {count} in the collection" in capsys.readouterr().out
    )
    assert main(["--url", typesense_server.url, "--api-key", "wrong", "--collection", name]) == 1
    assert "401" in capsys.readouterr().out
