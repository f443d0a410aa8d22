"""The wallet tools over the real local chains (anvil, seeded from the write store).

Each failure the issue names is a clear tool result: a node that is down or hangs, a call
that reverts inside the Multicall3 batch, an empty wallet, a bad address, an unknown ENS
name. Figures are checked against what the chain itself answers, read here with hand-written
calldata (not the project's ABI code).
"""

from __future__ import annotations

import json
import threading
from contextlib import asynccontextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
from tests.data_server.wallets.rpc_node import MULTICALL3, unpack_aggregate3
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
        if p["kind"] == "native":
            continue  # no contract to ask: see the native balance test
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
    # Every address in the output is EIP-55 checksummed (the native placeholder included).
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
    assert len(result["positions"]) == 8  # the rest of the batch was read (ETH included)


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
        assert result["chains_read"] == ["base"] and len(result["positions"]) == 4
        # The chain that did not answer gives no ETH figure either, not even a zero.
        assert [p["chain"] for p in result["positions"] if p["kind"] == "native"] == ["base"]
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
    # Next to a chain that answers, the mismatched one is an error and no balance is read
    # from it (base's 0.0425 ETH is not passed off as Ethereum's).
    urls = {"ethereum": local_chains.urls["base"], "base": local_chains.urls["base"]}
    async with tools(local_chains, urls) as c:
        both = data(await call(c, "wallet_positions", {"address": FARMER}))
    assert both["chains_read"] == ["base"]
    assert "serves chain id 8453, not 1" in both["chain_errors"][0]["error"]
    assert {p["chain"] for p in both["positions"]} == {"base"}


def test_no_revert_data_leaks_into_the_chain_state(local_chains: LocalChains) -> None:
    usdc = next(t for t in DEFAULT_TOKENS if t.chain == "base" and t.symbol == "USDC")
    answer = rpc_answer(local_chains.urls["base"], "eth_getCode", [usdc.address, "latest"])
    assert answer["result"] != "0x60006000fd"


# --- the native balance ---------------------------------------------------------------------

SAVER = "0x26113B7660BB832bC3fd65fA9230E5b3B22F91ac"


def _wei(url: str, address: str, block: str = "latest") -> int:
    return int(str(rpc(url, "eth_getBalance", [address, block])), 16)


async def test_a_wallet_with_eth_shows_its_exact_balance(local_chains: LocalChains) -> None:
    async with tools(local_chains) as client:
        result = data(await call(client, "wallet_positions", {"address": FARMER}))
    wallet = next(w for w in local_chains.fixture.wallets if w.address == FARMER)
    native = {p["chain"]: p for p in result["positions"] if p["kind"] == "native"}
    assert set(native) == {"ethereum", "base"}
    for chain, p in native.items():
        # The node's own eth_getBalance at the block the tool says it read.
        at = hex(result["blocks"][chain])
        assert int(p["balance_raw"]) == _wei(local_chains.urls[chain], FARMER, at)
        (amount,) = [n.amount for n in wallet.native if n.chain == chain]
        assert Decimal(p["balance_raw"]) == amount * 10**18  # to the wei, no float in between
        assert (p["symbol"], p["name"], p["decimals"]) == ("ETH", "Ether", 18)
        assert p["contract"] == "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"
        assert p["value_usd"] is None and p["share_of_wallet_pct"] is None
        assert p["notes"] == ["USD value unknown: no price for ETH in the store"]
    assert native["ethereum"]["balance_raw"] == "2718281828459045235"


async def test_a_wallet_without_eth_lists_none(local_chains: LocalChains) -> None:
    for url in local_chains.urls.values():
        assert _wei(url, SAVER) == 0
    async with tools(local_chains) as client:
        result = await call(client, "wallet_positions", {"address": SAVER})
        portfolio = data(await call(client, "wallet_portfolio", {"address": SAVER}))
    body = data(result)
    assert body["positions"] and all(p["kind"] != "native" for p in body["positions"])
    assert "ETH" not in text(result).replace("WETH", "")
    assert portfolio["native_positions"] == 0 and portfolio["unpriced_positions"] == 0


async def test_eth_shows_in_the_text_and_totals_say_it_is_unpriced(
    local_chains: LocalChains,
) -> None:
    async with tools(local_chains) as client:
        positions = await call(client, "wallet_positions", {"address": FARMER})
        portfolio = await call(client, "wallet_portfolio", {"address": FARMER})
        tokens = data(
            await call(client, "wallet_top_positions", {"address": FARMER, "kind": "token"})
        )
        vaults = data(
            await call(
                client, "wallet_top_positions", {"address": FARMER, "kind": "vault", "limit": 25}
            )
        )
    lines = text(positions).splitlines()
    assert (
        "- [ethereum] ETH (native balance): 2.718282, value unknown — "
        "USD value unknown: no price for ETH in the store"
    ) in lines
    assert any(
        line.startswith("- [base] ETH (native balance): 0.0425, value unknown") for line in lines
    )
    body = data(portfolio)
    assert body["native_positions"] == 2 and body["token_positions"] == 3
    # ETH on two chains and WETH are the unpriced ones (the Beefy share token is priced
    # from the store's TVL or not, as before): the total is the priced positions' sum only.
    unpriced = [p for p in body["positions"] if p["value_usd"] is None]
    assert body["unpriced_positions"] == len(unpriced)
    assert {("native", "ETH"), ("token", "WETH")} <= {(p["kind"], p["symbol"]) for p in unpriced}
    priced = sum(p["value_usd"] for p in body["positions"] if p["value_usd"] is not None)
    assert body["total_value_usd"] == pytest.approx(priced, abs=0.01)
    assert f"{body['unpriced_positions']} without a USD value" in text(portfolio)
    # A native balance is a plain balance: kind 'token' keeps it, kind 'vault' does not.
    assert {p["kind"] for p in tokens["positions"]} == {"token", "native"}
    assert all(p["kind"] == "vault" for p in vaults["positions"])


class _MovingChain:
    """A JSON-RPC relay to a real node that moves the chain on right after eth_blockNumber.

    Between the block the reader pins and its eth_calls, the wallet's ETH changes in a newly
    mined block: a read at the pinned block still sees the old balance; one at "latest" would
    not. Every request is kept so the test can see what went in which call.
    """

    def __init__(self, upstream: str, wallet: str, moved_to: int) -> None:
        self.requests: list[Any] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                relay.requests.append(body)
                answer = httpx.post(upstream, json=body, timeout=10).content
                if isinstance(body, dict) and body.get("method") == "eth_blockNumber":
                    # Mine first: anvil_setBalance edits the newest block's state in place,
                    # so the pinned block must be behind the head before the balance moves.
                    rpc(upstream, "evm_mine", [])
                    rpc(upstream, "anvil_setBalance", [wallet, hex(moved_to)])
                    rpc(upstream, "evm_mine", [])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def __enter__(self) -> _MovingChain:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


async def test_eth_is_read_at_the_same_block_as_the_tokens(local_chains: LocalChains) -> None:
    url = local_chains.urls["ethereum"]
    before = _wei(url, FARMER)
    moved = before + 10**18
    try:
        with _MovingChain(url, FARMER, moved) as relay:
            async with tools(local_chains, {"ethereum": relay.url}) as client:
                result = data(await call(client, "wallet_positions", {"address": FARMER}))
        block = result["blocks"]["ethereum"]
        # The chain did move under the read: the head holds the new balance.
        assert _wei(url, FARMER) == moved
        assert _wei(url, FARMER, hex(block)) == before
    finally:
        rpc(url, "anvil_setBalance", [FARMER, hex(before)])
    (eth,) = [p for p in result["positions"] if p["kind"] == "native"]
    assert int(eth["balance_raw"]) == before
    # One eth_call carries the ETH balance and every token balance, pinned to that block.
    calls = [r for r in relay.requests if isinstance(r, dict) and r["method"] == "eth_call"]
    assert {c["params"][1] for c in calls} == {hex(block)}
    inner = unpack_aggregate3(calls[0]["params"][0]["data"].removeprefix("0x"))
    selectors = [(target, data[:8]) for target, data in inner]
    assert selectors[0] == (MULTICALL3, "4d2301cc")
    tokens = {t.address.lower() for t in DEFAULT_TOKENS if t.chain == "ethereum"}
    assert tokens <= {target for target, sel in selectors if sel == "70a08231"}
    assert not any(r["method"] == "eth_getBalance" for r in relay.requests if isinstance(r, dict))


ALIASES = ("ethereum", "eth", "mainnet", " Ethereum ", "ETH")


async def test_any_list_of_one_chains_aliases_gives_the_same_total(
    local_chains: LocalChains,
) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    async with tools(local_chains) as client:
        single = data(
            await call(client, "wallet_portfolio", {"address": FARMER, "chains": ["ethereum"]})
        )
        assert single["total_value_usd"] > 0
        seen: list[dict[str, Any]] = []

        @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.lists(st.sampled_from(ALIASES), min_size=1, max_size=10))
        def one_total(chains: list[str]) -> None:
            seen.append({"chains": chains})

        one_total()
        for example in [*seen, {"chains": ["ethereum"] * 10}, {"chains": list(ALIASES[:3])}]:
            body = data(await call(client, "wallet_portfolio", {"address": FARMER, **example}))
            assert body["total_value_usd"] == single["total_value_usd"], example
            assert body["positions"] == single["positions"], example
