"""Reading a wallet over real JSON-RPC (loopback node with constructed vectors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from data_server.mcp_server.store_access import StoreCatalog
from data_server.store import VaultStore
from data_server.wallets.address import InvalidAddress, validate_address
from data_server.wallets.positions import WalletReader
from data_server.wallets.rpc import JsonRpcClient, RpcError
from tests.data_server.mcp_server.vault_data import (
    WALLET_LEGACY_VAULT_ADDRESS,
    WALLET_VAULT_ADDRESS,
    wallet_vaults,
)
from tests.data_server.wallets.rpc_node import RpcNode


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
    # eth_chainId, eth_blockNumber, then 5 tokens + 2 vaults in batches of 3 and 6 detail
    # calls in 2: five eth_calls, each pinned to the block read first.
    requests = node.requests[before:]
    assert [r["method"] for r in requests] == ["eth_chainId", "eth_blockNumber"] + ["eth_call"] * 5
    assert {r["params"][1] for r in requests[2:]} == {"0x1234"}
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
