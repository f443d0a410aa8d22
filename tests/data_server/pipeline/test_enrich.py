"""Asset symbols of vaults filled from other sources' knowledge of the same token."""

from __future__ import annotations

import json

import httpx

from albert.search.typesense_client import TypesenseClient
from data_server.fixtures import fixture_handler, load
from data_server.pipeline import offline_processors, run_pipeline
from data_server.pipeline.enrich import StoredNaming, fill_asset_symbols, symbol_registry
from data_server.processors import BeefyProcessor, DefiLlamaProcessor, YearnProcessor
from data_server.store import VaultStore
from data_server.vaults.model import Vault

from .conftest import http_client

CAMEL = "defillama/pools_camel_30_2025-12-24_timwf.json"


def _v(native: str, tokens: list[str], symbols: list[str], chain: str = "ethereum") -> Vault:
    return Vault(
        id=f"s:{chain}:{native}", source="s", name=native, protocol="p", chain=chain,
        underlying_tokens=tokens, asset_symbols=symbols, updated_at=1,
    )  # fmt: skip


def test_registry_uses_single_token_vaults_and_breaks_ties_stably() -> None:
    registry = symbol_registry(
        [
            _v("a", ["0xAA"], ["USDC"]),
            _v("b", ["0xaa"], ["USDC"]),
            _v("c", ["0xaa"], ["USDC.E"]),
            _v("lp", ["0xaa", "0xbb"], ["USDC", "WETH"]),
            _v("d", ["0xcc"], ["ZZZ"]),
            _v("e", ["0xcc"], ["AAA"]),
        ]
    )
    assert registry[("ethereum", "0xaa")] == ["USDC"]
    assert registry[("ethereum", "0xcc")] == ["AAA"]
    assert ("ethereum", "0xbb") not in registry
    filled, count = fill_asset_symbols(
        [_v("y", ["0xAA"], []), _v("z", ["0xaa"], [], chain="base"), _v("w", ["0xcc"], ["X"])],
        registry,
    )
    assert count == 1
    assert filled[0].asset_symbols == ["USDC"] and filled[0].stablecoin is True
    assert filled[1].asset_symbols == [] and filled[2].asset_symbols == ["X"]


async def test_yearn_vaults_get_symbols_from_beefy_and_keep_them(store: VaultStore) -> None:
    beefy_tokens = {
        c["tokenAddress"].lower(): [a.upper() for a in c["assets"]]
        for c in load("beefy/vaults_config_ethereum.json")
        if c.get("tokenAddress") and len(c["assets"]) == 1
    }
    yearn = load("yearn/vaults_1.json")["vaults"]
    address, meta = next((a, m) for a, m in yearn.items() if m["token"].lower() in beefy_tokens)
    vid = f"yearn:ethereum:{address}"
    sources = [BeefyProcessor(), YearnProcessor(chains=(1,))]

    async with http_client() as http:
        await run_pipeline(sources, store, None, http=http)
    vault = store.get_vault(vid)
    assert vault is not None and vault.asset_symbols == beefy_tokens[meta["token"].lower()]

    def beefy_down(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.beefy.finance":
            return httpx.Response(502)
        return fixture_handler(request)

    async with http_client(beefy_down) as http:
        report = await run_pipeline(sources, store, None, http=http)
    yearn_run = next(s for s in report.run.sources if s.source == "yearn")
    assert yearn_run.updated == 0  # the store still knows the token: nothing flips back
    again = store.get_vault(vid)
    assert again is not None and again.asset_symbols == vault.asset_symbols


async def test_a_large_source_written_in_slices_still_gets_symbols_from_the_others(
    store: VaultStore, index_client: TypesenseClient, collection: str
) -> None:
    # A DefiLlama pool naming its token only by address, which a Beefy vault names.
    config = next(
        c
        for c in load("beefy/vaults_config_ethereum.json")
        if c.get("tokenAddress") and len(c["assets"]) == 1
    )
    token, symbols = config["tokenAddress"], [a.upper() for a in config["assets"]]
    pool = next(r for r in load(CAMEL)["pools"] if r["chain"] == "Ethereum")["poolId"]

    def unnamed_pool(request: httpx.Request) -> httpx.Response:
        response = fixture_handler(request)
        if request.url.host == "yields.llama.fi" and request.url.path == "/pools":
            body = json.loads(response.content)
            for row in body["data"]:
                if row.get("poolId") == pool:
                    row["symbol"], row["underlyingTokens"] = "", [token]
            return httpx.Response(200, json=body, headers={"date": response.headers["date"]})
        return response

    sources = [DefiLlamaProcessor(chart_pools=[]), BeefyProcessor()]
    async with http_client(unnamed_pool) as http:
        report = await run_pipeline(
            sources, store, index_client, http=http, collection=collection, slice_size=50
        )
    assert report.ok
    vid = f"defillama:ethereum:{pool}"
    vault = store.get_vault(vid)
    assert vault is not None and vault.asset_symbols == symbols
    assert (await index_client.get_document(collection, vid))["asset_symbols"] == symbols
    # Written once: held back from its slice until the other sources were parsed.
    defillama = next(s for s in report.run.sources if s.source == "defillama")
    assert (defillama.inserted, defillama.updated) == (defillama.vaults, 0)


async def test_the_store_lends_the_same_votes_read_from_its_json(store: VaultStore) -> None:
    async with http_client() as http:
        await run_pipeline(offline_processors(), store, None, http=http)
    store.upsert_vaults(
        [
            _v("mixed", ["0xAbC"], ["WETH"]),
            _v("two", ["0x1", "0x2"], ["A", "B"]),
            _v("unnamed", ["0x3"], []),
        ]
    )
    namings = store.single_token_namings()
    assert ("ethereum", "0xAbC", ["WETH"]) in namings
    assert not any(token in ("0x1", "0x2", "0x3") for _, token, _ in namings)
    stored = [StoredNaming(chain, [token], symbols) for chain, token, symbols in namings]
    registry = symbol_registry(list(store.iter_vaults()))
    assert len(registry) > 100
    assert symbol_registry(stored) == registry
