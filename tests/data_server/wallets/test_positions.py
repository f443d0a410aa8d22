"""Reading a wallet over real JSON-RPC (loopback node with constructed vectors)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from data_server.mcp_server.store_access import StoreCatalog
from data_server.store import VaultStore
from data_server.wallets.address import InvalidAddress, validate_address
from data_server.wallets.chain_ids import CHAIN_IDS
from data_server.wallets.positions import WalletReader
from data_server.wallets.rpc import JsonRpcClient, RpcError
from data_server.wallets.tokens import NATIVE_ADDRESS, NATIVE_ASSETS
from tests.data_server.mcp_server.vault_data import (
    WALLET_LEGACY_VAULT_ADDRESS,
    WALLET_VAULT_ADDRESS,
    wallet_vaults,
)
from tests.data_server.wallets.rpc_node import MULTICALL3, RpcNode, unpack_aggregate3


@pytest.fixture(scope="module")
def node() -> Iterator[RpcNode]:
    server = RpcNode().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[VaultStore]:
    with VaultStore(tmp_path / "store.sqlite3") as s:
        s.upsert_vaults(wallet_vaults())
        yield s


async def test_reads_tokens_and_vault_positions(node: RpcNode, store: VaultStore) -> None:
    async with httpx.AsyncClient() as http:
        reader = WalletReader(
            {"ethereum": JsonRpcClient(node.url, http)}, StoreCatalog(store), batch_size=3
        )
        before = len(node.requests)
        readout = await reader.read(node.vectors.wallet.lower())
    assert readout.address == node.vectors.wallet
    assert readout.chains_read == ["ethereum"]
    by_contract = {p.contract.lower(): p for p in readout.positions}
    usdc = by_contract["0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48"]
    assert usdc.kind == "token" and usdc.balance == pytest.approx(1250.5)
    assert usdc.value_usd == pytest.approx(1250.5)
    weth = by_contract["0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"]
    assert weth.balance == pytest.approx(0.75) and weth.value_usd is None
    assert "0x6b175474e89094c44da98b954eedeac495271d0f" not in by_contract  # DAI balance is 0
    # The native balance: exact to the wei in balance_raw, unpriced as WETH is.
    eth = by_contract[NATIVE_ADDRESS.lower()]
    assert (eth.kind, eth.symbol, eth.decimals) == ("native", "ETH", 18)
    assert eth.balance_raw == "1500000000000000001" and eth.value_usd is None
    assert eth.notes == ["USD value unknown: no price for ETH in the store"]

    erc4626 = by_contract[WALLET_VAULT_ADDRESS]
    assert erc4626.kind == "vault" and erc4626.balance == pytest.approx(1000)
    assert erc4626.underlying_amount == pytest.approx(1050)
    # 1,000 of 8,000,000 shares of a $10M vault.
    assert erc4626.value_usd == pytest.approx(1250)
    assert erc4626.risk_rating is not None

    legacy = by_contract[WALLET_LEGACY_VAULT_ADDRESS]
    # convertToAssets reverts: the amount falls back to the recorded share price.
    assert legacy.underlying_amount == pytest.approx(3.0)
    assert legacy.value_usd == pytest.approx(6000)
    # eth_chainId, eth_blockNumber, then ETH + 5 tokens + 2 vaults in batches of 3 and 6
    # detail calls in 2: five eth_calls, each pinned to the block read first; ETH rides in
    # the first batch with the first two tokens.
    requests = node.requests[before:]
    assert [r["method"] for r in requests] == ["eth_chainId", "eth_blockNumber"] + ["eth_call"] * 5
    assert {r["params"][1] for r in requests[2:]} == {"0x1234"}
    first = unpack_aggregate3(requests[2]["params"][0]["data"].removeprefix("0x"))
    assert [(t, d[:8]) for t, d in first] == [
        (MULTICALL3, "4d2301cc"),
        ("0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", "70a08231"),
        ("0xdac17f958d2ee523a2206206994597c13d831ec7", "70a08231"),
    ]
    assert readout.blocks == {"ethereum": 0x1234}
    assert "underlying amount from the recorded price per share" in legacy.notes


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("0x1234", "expected 40 hex digits"),
        ("5A0b54D5dc17e0AadC383d2db43B0a0D3E029c4c", "must start with 0x"),
        ("0xZZ0b54D5dc17e0AadC383d2db43B0a0D3E029c4c", "non-hex"),
        ("0x5a0B54D5dc17e0AadC383d2db43B0a0D3E029c4c", "checksum"),
    ],
)
def test_invalid_addresses_are_refused_with_a_reason(address: str, reason: str) -> None:
    with pytest.raises(InvalidAddress, match=reason):
        validate_address(address)


async def test_a_failing_node_is_an_rpc_error(node: RpcNode, store: VaultStore) -> None:
    async with httpx.AsyncClient() as http:
        client = JsonRpcClient(node.url + "down", http)
        with pytest.raises(RpcError, match="-32603"):
            await client.eth_call(WALLET_VAULT_ADDRESS, b"\x31\x3c\xe5\x67")
        reader = WalletReader({"ethereum": client}, StoreCatalog(store))
        readout = await reader.read(node.vectors.wallet)
    assert readout.chains_read == [] and readout.chain_errors[0].chain == "ethereum"


async def test_an_unreachable_node_is_an_rpc_error() -> None:
    async with httpx.AsyncClient() as http:
        client = JsonRpcClient("http://127.0.0.1:9/", http, timeout=2)
        with pytest.raises(RpcError, match="unreachable"):
            await client.eth_call(WALLET_VAULT_ADDRESS, b"")


async def test_a_chain_without_a_known_native_asset_reads_no_native_balance(
    node: RpcNode, store: VaultStore
) -> None:
    natives = {c: t for c, t in NATIVE_ASSETS.items() if c != "ethereum"}
    async with httpx.AsyncClient() as http:
        reader = WalletReader(
            {"ethereum": JsonRpcClient(node.url, http)}, StoreCatalog(store), natives=natives
        )
        before = len(node.requests)
        readout = await reader.read(node.vectors.wallet)
    assert readout.chains_read == ["ethereum"]
    assert all(p.kind != "native" for p in readout.positions)
    calls = unpack_aggregate3(node.requests[before + 2]["params"][0]["data"].removeprefix("0x"))
    assert all(d[:8] != "4d2301cc" for _, d in calls)


def test_every_chain_with_an_id_has_its_real_native_asset() -> None:
    symbols = {chain: NATIVE_ASSETS[chain].symbol for chain in CHAIN_IDS}
    assert symbols == {
        "ethereum": "ETH",
        "optimism": "ETH",
        "bsc": "BNB",
        "gnosis": "XDAI",
        "polygon": "POL",
        "base": "ETH",
        "arbitrum": "ETH",
        "avalanche": "AVAX",
    }
    assert {t.decimals for t in NATIVE_ASSETS.values()} == {18}
    assert {t.address for t in NATIVE_ASSETS.values()} == {NATIVE_ADDRESS}


ETHEREUM_NAMES = ("ethereum", "eth", "mainnet", "ethereum-mainnet", " Ethereum ", "ETH", "MainNet")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chains=st.lists(st.sampled_from(ETHEREUM_NAMES), min_size=1, max_size=10))
@example(chains=["eth", "ethereum", "mainnet"])
@example(chains=["ethereum"] * 10)
def test_any_list_of_one_chains_names_reads_it_once_with_the_same_total(
    node: RpcNode, store: VaultStore, chains: list[str]
) -> None:
    """Aliases and repeats of one chain are that chain once: the same positions and total as
    naming it once, from one read of the node (before, ["ethereum"] x 10 counted it ten times)."""

    async def read(names: list[str]) -> tuple[float, list[object], int]:
        async with httpx.AsyncClient() as http:
            reader = WalletReader({"ethereum": JsonRpcClient(node.url, http)}, StoreCatalog(store))
            before = len(node.requests)
            readout = await asyncio.wait_for(reader.read(node.vectors.wallet, names), 10)
        reads = [r for r in node.requests[before:] if r["method"] == "eth_chainId"]
        assert readout.chains_read == ["ethereum"]
        return readout.known_value_usd, list(readout.positions), len(reads)

    single = asyncio.run(read(["ethereum"]))
    named = asyncio.run(read(chains))
    assert single[0] > 0
    assert named == single, chains
    assert named[2] == 1, "the chain was read once"
