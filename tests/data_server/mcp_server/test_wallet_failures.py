"""Wallet tools when the chain node fails: a clear tool error, never a crash."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from albert.search import TypesenseClient
from data_server.mcp_server import build_mcp_server
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.store_access import StoreCatalog
from data_server.mcp_server.vault_index import VaultIndex
from data_server.store import VaultStore
from data_server.wallets.positions import WalletReader
from data_server.wallets.rpc import JsonRpcClient
from tests.data_server.mcp_server.vault_data import wallet_vaults
from tests.data_server.wallets.rpc_node import RpcNode
from tests.typesense_fixture import TypesenseServer


@pytest.fixture(scope="module")
def node() -> Iterator[RpcNode]:
    server = RpcNode().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("suffix", "message"),
    [("down", "RPC error -32603"), (None, "RPC node unreachable")],
)
async def test_failing_node_is_a_tool_error(
    node: RpcNode,
    typesense_server: TypesenseServer,
    tmp_path: Path,
    suffix: str | None,
    message: str,
) -> None:
    url = node.url + suffix if suffix else "http://127.0.0.1:9/"
    with VaultStore(tmp_path / "store.sqlite3") as store:
        store.upsert_vaults(wallet_vaults())
        async with httpx.AsyncClient() as http:
            reader = WalletReader(
                {"ethereum": JsonRpcClient(url, http, timeout=2)}, StoreCatalog(store)
            )
            index = VaultIndex(
                TypesenseClient(typesense_server.url, typesense_server.api_key, http), "unused"
            )
            server = build_mcp_server(ToolDeps(index=index, wallets=reader))
            async with Client(server) as client:
                result = await client.call_tool(
                    "wallet_portfolio", {"address": node.vectors.wallet}
                )
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Error: could not read any chain") and message in text


async def test_no_rpc_configured_is_a_tool_error(typesense_server: TypesenseServer) -> None:
    async with httpx.AsyncClient() as http:
        index = VaultIndex(
            TypesenseClient(typesense_server.url, typesense_server.api_key, http), "unused"
        )
        async with Client(build_mcp_server(ToolDeps(index=index))) as client:
            result = await client.call_tool(
                "wallet_positions", {"address": "0x5A0b54D5dc17e0AadC383d2db43B0a0D3E029c4c"}
            )
    assert result.is_error and "set RPC_URL" in result.content[0].text  # type: ignore[union-attr]
