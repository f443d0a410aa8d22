"""The wallet tools over the real local chains (anvil, seeded from the write store).

Each failure the issue names is a clear tool result: a node that is down or hangs, a call
that reverts inside the Multicall3 batch, an empty wallet, a bad address, an unknown ENS
name. Figures are checked against what the chain itself answers, read here with hand-written
calldata (not the project's ABI code).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from decimal import Decimal
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.types import CallToolResult

from albert.search import TypesenseClient
from data_server.mcp_server import build_mcp_server
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.store_access import StoreCatalog
from data_server.mcp_server.vault_index import VaultIndex
from data_server.store import VaultStore
from data_server.wallets.positions import WalletReader
from data_server.wallets.rpc import JsonRpcClient
from data_server.wallets.tokens import DEFAULT_TOKENS
from evals.stack import HangingServer
from tests.localchain_fixture import LocalChains, rpc, rpc_answer

FARMER = "0x257BC0C6921b4ae476E65A28744ee181cd81c533"
EMPTY = "0x838B0DB1A67e7d541ABbcd3879576Bc6Df2BE964"
CLOSED = "http://127.0.0.1:9"


def _uint(url: str, to: str, data: str) -> int:
    return int(str(rpc(url, "eth_call", [{"to": to, "data": "0x" + data}, "latest"])), 16)


def _word(address: str) -> str:
    return address.lower().removeprefix("0x").rjust(64, "0")


@asynccontextmanager
async def tools(local_chains: LocalChains, urls: dict[str, str] | None = None, timeout: float = 5):
    """An in-process MCP client of the data server's tools reading `urls` (default: the chains)."""
    with VaultStore(local_chains.store_path) as store:
        async with httpx.AsyncClient() as http:
            clients = {
                chain: JsonRpcClient(url, http, timeout=timeout)
                for chain, url in (urls or local_chains.urls).items()
            }
            index = VaultIndex(TypesenseClient(CLOSED, "unused", http=http), "unused")
            deps = ToolDeps(index=index, wallets=WalletReader(clients, StoreCatalog(store)))
            async with Client(build_mcp_server(deps)) as client:
                yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> CallToolResult:
    return await client.call_tool(tool, args)


def text(result: CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return result.structured_content


async def test_positions_match_what_the_chain_answers(local_chains: LocalChains) -> None:
    async with tools(local_chains) as client:
        await _test_positions_match_what_the_chain_answers(client, local_chains)


async def _test_positions_match_what_the_chain_answers(
    client: Client, local_chains: LocalChains
) -> None:
    result = data(await call(client, "wallet_positions", {"address": FARMER.lower()}))
    assert result["address"] == FARMER and result["ens_name"] is None
    assert set(result["blocks"]) == {"ethereum", "base"}
    for p in result["positions"]:
        url = local_chains.urls[p["chain"]]
        shares = _uint(url, p["contract"], "70a08231" + _word(FARMER))
        assert int(p["balance_raw"]) == shares
        if p["kind"] == "vault" and p["underlying_amount"] is not None:
            # convertToAssets(shares), straight from the vault contract.
            assets = _uint(url, p["contract"], "07a2d13a" + format(shares, "064x"))
            assert p["underlying_amount"] == pytest.approx(assets / 10 ** p["decimals"])
    wallet = next(w for w in local_chains.fixture.wallets if w.address == FARMER)
    usdc = next(
        p
        for p in result["positions"]
        if p["chain"] == "ethereum" and p["symbol"] == "USDC" and p["kind"] == "token"
    )
    assert Decimal(str(usdc["balance"])) == next(
        t.amount for t in wallet.tokens if t.symbol == "USDC" and t.chain == "ethereum"
    )
    assert usdc["value_usd"] == pytest.approx(12500.5)
    total = sum(p["value_usd"] or 0 for p in result["positions"])
    for p in result["positions"]:
        if p["value_usd"] is not None:
            assert p["share_of_wallet_pct"] == pytest.approx(100 * p["value_usd"] / total, abs=0.01)
    yearn = next(
        p
        for p in result["positions"]
        if p["vault_id"] == "yearn:ethereum:0x074134a2784f4f66b6ced6f68849382990ff3215"
    )
    assert yearn["apy"] is not None and yearn["risk_rating"] == "medium"
    # Every address in the output is EIP-55 checksummed.
    assert all(p["contract"] != p["contract"].lower() for p in result["positions"])
    assert FARMER in text(await call(client, "wallet_positions", {"address": FARMER}))


async def test_a_call_reverting_inside_the_batch_is_a_note_on_its_position(
    local_chains: LocalChains,
) -> None:
    async with tools(local_chains) as client:
        await _test_a_call_reverting_inside_the_batch_is_a_note_on_its_position(client)


async def _test_a_call_reverting_inside_the_batch_is_a_note_on_its_position(client: Client) -> None:
    result = data(
        await call(client, "wallet_positions", {"address": FARMER, "chains": ["ethereum"]})
    )
    # The Beefy vault's share token has no convertToAssets: that inner call reverts.
    beefy = next(
        p for p in result["positions"] if p["vault_id"] == "beefy:ethereum:morpho-steakhouse-usdc"
    )
    assert beefy["balance"] == 1500 and beefy["underlying_amount"] is None
    assert "convertToAssets() reverted" in beefy["notes"]
    assert len(result["positions"]) == 7  # the rest of the batch was read


async def test_a_reverting_balance_call_lists_the_holding_as_unreadable(
    local_chains: LocalChains,
) -> None:
    async with tools(local_chains) as client:
        await _test_a_reverting_balance_call_lists_the_holding_as_unreadable(client, local_chains)


async def _test_a_reverting_balance_call_lists_the_holding_as_unreadable(
    client: Client, local_chains: LocalChains
) -> None:
    url = local_chains.urls["base"]
    usdc = next(t for t in DEFAULT_TOKENS if t.chain == "base" and t.symbol == "USDC")
    code = rpc(url, "eth_getCode", [usdc.address, "latest"])
    rpc(url, "anvil_setCode", [usdc.address, "0x60006000fd"])  # PUSH1 0 PUSH1 0 REVERT
    try:
        result = await call(client, "wallet_portfolio", {"address": FARMER})
    finally:
        rpc(url, "anvil_setCode", [usdc.address, code])
    body = data(result)
    (unreadable,) = body["unreadable"]
    assert unreadable["contract"] == usdc.address and unreadable["reason"] == "balanceOf reverted"
    assert body["vault_positions"] == 7  # vault reads on the same chain went on
    assert "Could not read the holding in USDC (base" in text(result)


async def test_an_empty_wallet_is_an_empty_portfolio(local_chains: LocalChains) -> None:
    async with tools(local_chains) as client:
        await _test_an_empty_wallet_is_an_empty_portfolio(client)


async def _test_an_empty_wallet_is_an_empty_portfolio(client: Client) -> None:
    for tool in ("wallet_portfolio", "wallet_positions", "wallet_top_positions"):
        result = await call(client, tool, {"address": EMPTY})
        assert not result.is_error, text(result)
        assert "holds none of the listed tokens, no ETH and no position in a known vault" in text(
            result
        )
    portfolio = data(await call(client, "wallet_portfolio", {"address": EMPTY}))
    assert portfolio["total_value_usd"] == 0 and portfolio["positions"] == []


async def test_ens_names_resolve_and_unknown_ones_say_so(local_chains: LocalChains) -> None:
    async with tools(local_chains) as client:
        await _test_ens_names_resolve_and_unknown_ones_say_so(client)


async def _test_ens_names_resolve_and_unknown_ones_say_so(client: Client) -> None:
    result = data(
        await call(client, "wallet_top_positions", {"address": "Yield-Farmer.ETH", "limit": 3})
    )
    assert result["address"] == FARMER and result["ens_name"] == "yield-farmer.eth"
    assert len(result["positions"]) == 3
    for name, reason in (
        (
            "nobody-registered-this.eth",
            "name does not resolve: nobody-registered-this.eth has no resolver set",
        ),
        (
            "no-address.albert.eth",
            "name does not resolve: no-address.albert.eth has no address record",
        ),
        ("bad..eth", "not a valid ENS name"),
    ):
        failed = await call(client, "wallet_portfolio", {"address": name})
        assert failed.is_error and reason in text(failed), text(failed)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("0x257BC0C6921b4ae476E65A28744ee181cd81c53", "expected 40 hex digits"),
        ("0x257bC0C6921b4ae476E65A28744ee181cd81c533", "checksum"),
        ("257BC0C6921b4ae476E65A28744ee181cd81c533", "must start with 0x"),
        ("0x257BC0C6921b4ae476E65A28744ee181cd81cZZZ", "non-hex"),
    ],
)
async def test_a_bad_address_is_refused_with_its_reason(
    local_chains: LocalChains, address: str, reason: str
) -> None:
    async with tools(local_chains) as client:
        result = await call(client, "wallet_positions", {"address": address})
    assert result.is_error and reason in text(result)


async def test_a_node_that_is_down_is_reported_per_chain(local_chains: LocalChains) -> None:
    urls = {"ethereum": CLOSED, "base": local_chains.urls["base"]}
    async with tools(local_chains, urls) as c:
        result = data(await call(c, "wallet_positions", {"address": FARMER}))
        assert result["chains_read"] == ["base"] and len(result["positions"]) == 3
        (error,) = result["chain_errors"]
        assert error["chain"] == "ethereum" and "RPC node unreachable" in error["error"]
        # ENS needs the Ethereum node: the name cannot be resolved, and says why.
        named = await call(c, "wallet_positions", {"address": "yield-farmer.eth"})
        assert named.is_error and "could not resolve the ENS name yield-farmer.eth" in text(named)
    async with tools(local_chains, {"ethereum": CLOSED}) as c:
        down = await call(c, "wallet_portfolio", {"address": FARMER})
        assert down.is_error and "could not read any chain" in text(down)


async def test_a_node_that_hangs_times_out_per_chain(local_chains: LocalChains) -> None:
    with HangingServer() as hanging:
        urls = {"ethereum": local_chains.urls["ethereum"], "base": hanging.url}
        # Long enough for the live node to answer on a loaded machine.
        async with tools(local_chains, urls, timeout=5) as c:
            result = data(await call(c, "wallet_positions", {"address": FARMER}))
    assert result["chains_read"] == ["ethereum"]
    assert "timed out after 5 s" in result["chain_errors"][0]["error"]


async def test_a_node_serving_another_chain_is_not_trusted(local_chains: LocalChains) -> None:
    async with tools(local_chains, {"ethereum": local_chains.urls["base"]}) as c:
        result = await call(c, "wallet_positions", {"address": FARMER})
    assert result.is_error and "serves chain id 8453, not 1" in text(result)


def test_no_revert_data_leaks_into_the_chain_state(local_chains: LocalChains) -> None:
    usdc = next(t for t in DEFAULT_TOKENS if t.chain == "base" and t.symbol == "USDC")
    answer = rpc_answer(local_chains.urls["base"], "eth_getCode", [usdc.address, "latest"])
    assert answer["result"] != "0x60006000fd"
