"""The ten tools through a real MCP client over streamable HTTP, against the real index."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.types import CallToolResult

from albert.search import SearchParams, TypesenseClient
from data_server.coaching import GUIDELINES_HEADER
from data_server.mcp_server import TOOL_NAMES
from data_server.vaults.model import Vault, is_outlier
from tests.data_server.mcp_server.servers import AppServer, active_vaults
from tests.data_server.mcp_server.vault_data import BAND_APYS, WALLET_VAULT_ADDRESS

# The framework's bands as the guidelines must state them.
BAND_TEXT = {
    "below_5": "below 5% — may not justify the risk",
    "conservative": "5–10% — conservative",
    "medium": "10–20% — medium",
    "high": "20–40% — high",
    "extreme": "above 40% — extreme",
}


async def call(server: AppServer, name: str, args: dict[str, Any]) -> CallToolResult:
    async with Client(server.mcp_url) as client:
        return await client.call_tool(name, args)


def texts(result: CallToolResult) -> list[str]:
    return [part.text for part in result.content]  # type: ignore[union-attr]


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, texts(result)
    assert result.structured_content is not None
    return result.structured_content


async def test_lists_ten_tools_with_input_and_output_schemas(app_server: AppServer) -> None:
    async with Client(app_server.mcp_url) as client:
        listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == set(TOOL_NAMES) and len(tools) == 10
    for tool in tools.values():
        assert tool.output_schema and tool.output_schema["type"] == "object"
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    search = tools["search_vaults"].input_schema["properties"]
    assert len(search) >= 25
    assert "PERCENT" in search["min_apy"]["description"]
    assert search["min_tvl_usd"]["anyOf"][0]["minimum"] == 0


async def test_search_vaults_filters_sorts_and_pages(app_server: AppServer) -> None:
    args = {"chain": "ethereum", "stablecoin_only": True, "min_tvl_usd": 1_000_000}
    expected = [
        v
        for v in active_vaults(app_server.store)
        if v.chain == "ethereum" and v.stablecoin and (v.tvl_usd or 0) >= 1_000_000
    ]
    result = ok(await call(app_server, "search_vaults", {**args, "sort_by": "tvl_usd"}))
    assert result["found"] == len(expected) > 10
    tvls = [v["tvl_usd"] for v in result["vaults"]]
    assert tvls == sorted((v.tvl_usd or 0 for v in expected), reverse=True)[:10]
    page2 = ok(await call(app_server, "search_vaults", {**args, "sort_by": "tvl_usd", "page": 2}))
    assert not {v["id"] for v in page2["vaults"]} & {v["id"] for v in result["vaults"]}
    by_apy = ok(await call(app_server, "search_vaults", {**args, "sort_by": "apy", "min_apy": 0}))
    apys = sorted((v.apy for v in expected if v.apy is not None), reverse=True)
    assert [v["apy"] for v in by_apy["vaults"]] == pytest.approx(apys[:10], rel=1e-6)


async def test_or_group_is_parenthesised_so_the_chain_filter_holds(app_server: AppServer) -> None:
    # USDC vaults exist on base too; without parentheses `chain && symbols || name` would
    # let base vaults named after USDC through.
    result = ok(
        await call(
            app_server, "search_vaults", {"chain": "eth", "asset_symbol": "usdc", "per_page": 50}
        )
    )
    assert "(asset_symbols:=[USDC] || name:USDC)" in result["filter_by"]
    assert result["vaults"] and {v["chain"] for v in result["vaults"]} == {"ethereum"}
    assert all(
        "USDC" in v["asset_symbols"] or "USDC" in v["name"].upper() for v in result["vaults"]
    )
    # The same clauses without the parentheses do let the base vault through.
    async with TypesenseClient(
        app_server.settings.typesense_url, app_server.settings.typesense_api_key.get_secret_value()
    ) as client:
        flat = result["filter_by"].replace("(", "").replace(")", "")
        loose = await client.search(
            app_server.settings.vaults_collection,
            SearchParams(q="*", filter_by=flat, per_page=250),
        )
    assert "test:base:usdc-lending" in {h.document["id"] for h in loose.hits}


async def test_risk_and_protocol_filters(app_server: AppServer) -> None:
    def wanted(v: Vault) -> bool:
        inputs = v.security_inputs
        return (
            v.risk_rating in ("low", "medium")
            and inputs is not None
            and (inputs.audits or 0) > 0
            and (inputs.protocol_age_days or 0) >= 1000
            and not v.il_risk
        )

    expected = {v.id for v in active_vaults(app_server.store) if wanted(v)}
    result = ok(
        await call(
            app_server,
            "search_vaults",
            {
                "max_risk_rating": "medium",
                "audited": True,
                "min_protocol_age_days": 1000,
                "il_risk": False,
                "per_page": 50,
            },
        )
    )
    assert result["found"] == len(expected) > 0
    assert {v["id"] for v in result["vaults"]} <= expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"min_tvl_usd": -5}, "min_tvl_usd: Input should be greater than or equal to 0"),
        ({"chain": "narnia"}, "unknown chain 'narnia'"),
        ({"min_apy": 20, "max_apy": 10}, "min_apy (20) is greater than max_apy (10)"),
        ({"min_tvl_usd": 5e6, "max_tvl_usd": 1e6}, "min_tvl_usd (5e+06) is greater than"),
        ({"chains": ["base", "atlantis"]}, "unknown chain 'atlantis'"),
        ({"protocol": "aave v3!"}, "is not a protocol slug"),
        ({"sort_by": "name"}, "sort_by: Input should be"),
        ({"min_apy_pct": 3}, "min_apy_pct: unknown parameter"),
    ],
)
async def test_invalid_filters_are_tool_errors(
    app_server: AppServer, args: dict[str, Any], message: str
) -> None:
    result = await call(app_server, "search_vaults", args)
    assert result.is_error
    (text,) = texts(result)
    assert text.startswith("Error: ") and message in text


@pytest.mark.parametrize("band", list(BAND_APYS))
async def test_guidelines_carry_the_band_of_each_rated_result(
    app_server: AppServer, band: str
) -> None:
    result = await call(app_server, "analyze_risk", {"vault_id": f"test:base:band-{band}"})
    ok(result)
    _summary, guidelines = texts(result)
    assert guidelines.startswith(f"## {GUIDELINES_HEADER}")
    (line,) = [x for x in guidelines.splitlines() if x.startswith(f"- Band {band} vault")]
    assert f"APY {BAND_APYS[band]:.2f}% → {BAND_TEXT[band]};" in line
    assert "Base:" in guidelines and "Aave v3" in guidelines  # chain and protocol context


async def test_guidelines_only_when_a_risk_rating_is_present(app_server: AppServer) -> None:
    rated = await call(app_server, "search_vaults", {"asset_symbol": "BANDUSD"})
    assert len(texts(rated)) == 2 and GUIDELINES_HEADER in texts(rated)[1]
    unrated = await call(app_server, "search_vaults", {"asset_symbol": "NOSCORE"})
    assert ok(unrated)["found"] == 1 and ok(unrated)["vaults"][0]["risk_rating"] is None
    assert len(texts(unrated)) == 1 and GUIDELINES_HEADER not in texts(unrated)[0]
    risk = await call(app_server, "analyze_risk", {"vault_id": "test:base:unrated"})
    assert len(texts(risk)) == 1
    protocols = await call(app_server, "search_protocols", {"query": "curve"})
    assert len(texts(protocols)) == 1  # aggregates carry no single risk rating


def _longest_history(app_server: AppServer) -> tuple[Vault, list[Any]]:
    store = app_server.store
    best: tuple[Vault, list[Any]] | None = None
    for vault in active_vaults(store):
        points = store.history(vault.id)
        if best is None or len(points) > len(best[1]):
            best = (vault, points)
    assert best is not None and len(best[1]) > 90
    return best


async def test_analyze_yield(app_server: AppServer) -> None:
    vault, points = _longest_history(app_server)
    result = await call(app_server, "analyze_yield", {"vault_id": vault.id, "history_days": 30})
    data = ok(result)
    assert data["vault"]["id"] == vault.id
    last30 = [p.apy for p in points[-30:]]
    assert data["history"]["points"] == 30
    assert data["history"]["apy_mean"] == pytest.approx(sum(last30) / 30, abs=1e-3)
    assert data["peers"]["peers"] >= 1
    assert (len(texts(result)) == 2) == (vault.risk_rating is not None)


async def test_vault_history(app_server: AppServer) -> None:
    vault, points = _longest_history(app_server)
    data = ok(await call(app_server, "vault_history", {"vault_id": vault.id, "days": 90}))
    assert [p["timestamp"] for p in data["points"]] == [p.timestamp for p in points[-90:]]
    assert data["summary"]["last_day"] is not None
    missing = await call(app_server, "vault_history", {"vault_id": "nope:nope:nope"})
    assert missing.is_error and "no vault with id" in texts(missing)[0]


async def test_search_protocols(app_server: AppServer) -> None:
    vaults = active_vaults(app_server.store)
    data = ok(await call(app_server, "search_protocols", {"query": "aerodrome"}))
    found = {p["protocol"]: p for p in data["protocols"]}
    expected = {v.protocol for v in vaults if "aerodrome" in v.protocol}
    assert set(found) == expected and expected
    for protocol, summary in found.items():
        mine = [v for v in vaults if v.protocol == protocol]
        assert summary["vaults"] == len(mine)
        assert summary["total_tvl_usd"] == pytest.approx(sum(v.tvl_usd or 0 for v in mine))
    listing = ok(await call(app_server, "search_protocols", {"chain": "base", "limit": 3}))
    tvls = [p["total_tvl_usd"] for p in listing["protocols"]]
    assert tvls == sorted(tvls, reverse=True) and len(tvls) == 3
    assert all(p["chains"] == ["base"] for p in listing["protocols"])


async def test_search_vault_assets(app_server: AppServer) -> None:
    vaults = active_vaults(app_server.store)
    data = ok(
        await call(app_server, "search_vault_assets", {"query": "crvusd", "chain": "ethereum"})
    )
    exact = data["tokens"][0]
    holders = [
        v
        for v in vaults
        if v.chain == "ethereum" and "CRVUSD" in (s.upper() for s in v.asset_symbols)
    ]
    assert exact["symbol"] == "CRVUSD" and exact["chain"] == "ethereum"
    assert exact["vaults"] == len(holders) > 3
    usdc_arb = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"
    by_address = ok(await call(app_server, "search_vault_assets", {"query": usdc_arb}))
    assert by_address["tokens"][0]["chain"] == "arbitrum"
    assert usdc_arb.lower() in by_address["tokens"][0]["addresses"]
    bad = await call(app_server, "search_vault_assets", {"query": "0x1234"})
    assert bad.is_error and "not a token address" in texts(bad)[0]


async def test_top_yields(app_server: AppServer) -> None:
    vaults = active_vaults(app_server.store)
    result = await call(app_server, "top_yields", {"limit": 5})
    data = ok(result)

    def flagged(v: Vault) -> bool:
        return is_outlier(v.apy, v.security_inputs.source_flags if v.security_inputs else None)

    def ranked(keep_outliers: bool) -> list[float]:
        return sorted(
            (
                v.apy
                for v in vaults
                if v.apy is not None
                and 0 <= v.apy <= 1000
                and (v.tvl_usd or 0) >= 1_000_000
                and (keep_outliers or not flagged(v))
            ),
            reverse=True,
        )[:5]

    # Likely outliers (flagged by their source) are left out of the ranking, and said so.
    assert [v["apy"] for v in data["vaults"]] == pytest.approx(ranked(False), rel=1e-6)
    assert ranked(True) != ranked(False), "the recordings hold flagged outliers"
    assert "Left out as likely outliers" in " ".join(texts(result))
    assert data["outliers_left_out"] and not data["only_outliers"]
    kept = ok(await call(app_server, "top_yields", {"limit": 5, "include_outliers": True}))
    assert [v["apy"] for v in kept["vaults"]] == pytest.approx(ranked(True), rel=1e-6)
    loose = ok(await call(app_server, "top_yields", {"limit": 5, "min_tvl_usd": 0}))
    assert loose["vaults"][0]["apy"] >= data["vaults"][0]["apy"]
    bad = await call(app_server, "top_yields", {"chain": "mordor"})
    assert bad.is_error and "unknown chain" in texts(bad)[0]
    bad = await call(app_server, "top_yields", {"asset_symbol": "$$ bad"})
    assert bad.is_error and "asset_symbol: '$$ bad' is not a token symbol" in texts(bad)[0]


async def test_analyze_risk(app_server: AppServer) -> None:
    vault = next(
        v
        for v in active_vaults(app_server.store)
        if v.il_risk and v.risk_rating and v.security_inputs and v.security_inputs.source_flags
    )
    result = await call(app_server, "analyze_risk", {"vault_id": vault.id})
    data = ok(result)
    assert data["security_score"] == pytest.approx(vault.security_score)
    assert data["breakdown"]["score"] == pytest.approx(vault.security_score)
    factors = {f["factor"]: f for f in data["factors"]}
    assert factors["impermanent_loss"]["assessment"] == "concern"
    flagged = {f["value"]: f for f in data["factors"] if f["factor"] == "source_flag"}
    assert set(flagged) == set(vault.security_inputs.source_flags)
    penalised = set(data["breakdown"]["penalties"])
    assert {k for k, f in flagged.items() if f["assessment"] == "concern"} == penalised
    assert data["concerns"] == sum(f["assessment"] == "concern" for f in data["factors"])
    assert "Score " in texts(result)[0]
    # Factors and score parts are named in words, for the answer and for the model alike.
    assert factors["impermanent_loss"]["label"] == "Impermanent loss"
    assert factors["protocol_age"]["label"] == "Protocol age"
    parts = {p["component"]: p for p in data["score_parts"]}
    assert parts.keys() == data["breakdown"]["components"].keys()
    assert parts["il_risk"]["label"] == "Impermanent loss" and parts["audits"]["out_of"] == 20
    assert "- Impermanent loss: yes (concern)" in texts(result)[0]
    # A reading its assessment only repeats is said once, not "unknown (unknown)".
    repeated = [f for f in data["factors"] if str(f["value"]) == f["assessment"]]
    assert repeated, data["factors"]
    for factor in repeated:
        label, value = factor["label"], factor["value"]
        assert f"- {label}: {value} ({value})" not in texts(result)[0]
        assert f"- {label}: {value}" in texts(result)[0]
    assert "protocol_age" not in texts(result)[0] and "il_risk" not in texts(result)[0]


async def test_wallet_positions(app_server: AppServer) -> None:
    wallet = app_server.rpc.vectors.wallet
    result = await call(app_server, "wallet_positions", {"address": wallet})
    data = ok(result)
    assert data["address"] == wallet and data["chains_read"] == ["ethereum"]
    contracts = [p["contract"].lower() for p in data["positions"]]
    assert WALLET_VAULT_ADDRESS in contracts and len(contracts) == 5  # with the ETH balance
    values = [p["value_usd"] for p in data["positions"] if p["value_usd"] is not None]
    assert values == sorted(values, reverse=True)
    assert len(texts(result)) == 2  # vault positions carry risk ratings
    # A vault position links to the vault's page, as the index has it.
    by_id = {v.id: v for v in active_vaults(app_server.store)}
    vaults = [p for p in data["positions"] if p["kind"] == "vault"]
    assert vaults and all(p["vault_url"] == by_id[p["vault_id"]].url for p in vaults)


async def test_wallet_portfolio(app_server: AppServer) -> None:
    data = ok(
        await call(app_server, "wallet_portfolio", {"address": app_server.rpc.vectors.wallet})
    )
    # USDC $1,250.5 + 4626 vault $1,250 + legacy vault $6,000; WETH and ETH are unpriced.
    assert data["total_value_usd"] == pytest.approx(8500.5)
    assert data["unpriced_positions"] == 2 and data["vault_positions"] == 2
    assert data["token_positions"] == 2 and data["native_positions"] == 1
    assert data["weighted_vault_apy"] == pytest.approx((1250 * 6.0 + 6000 * 22.0) / 7250, rel=1e-4)


async def test_wallet_top_positions(app_server: AppServer) -> None:
    data = ok(
        await call(
            app_server,
            "wallet_top_positions",
            {"address": app_server.rpc.vectors.wallet.lower(), "limit": 2},
        )
    )
    assert [p["value_usd"] for p in data["positions"]] == pytest.approx([6000, 1250.5])
    assert data["share_of_value_pct"][0] == pytest.approx(100 * 6000 / 8500.5, abs=0.01)


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("0x123", "expected 40 hex digits"),
        ("5A0b54D5dc17e0AadC383d2db43B0a0D3E029c4c", "must start with 0x"),
        ("vitalik..eth", "not a valid ENS name"),
        ("wallet", "must start with 0x"),
        ("0x5a0B54D5dc17e0AadC383d2db43B0a0D3E029c4c", "checksum"),
    ],
)
async def test_wallet_tools_refuse_invalid_addresses(
    app_server: AppServer, address: str, message: str
) -> None:
    for tool in ("wallet_positions", "wallet_portfolio", "wallet_top_positions"):
        result = await call(app_server, tool, {"address": address})
        assert result.is_error and message in texts(result)[0], tool


async def test_wallet_chain_without_rpc_is_an_error(app_server: AppServer) -> None:
    result = await call(
        app_server,
        "wallet_positions",
        {"address": app_server.rpc.vectors.wallet, "chains": ["base"]},
    )
    assert result.is_error and "no RPC node for 'base'" in texts(result)[0]
    # A long name is quoted by its start: the error does not echo the caller's input whole.
    long = await call(
        app_server,
        "wallet_positions",
        {"address": app_server.rpc.vectors.wallet, "chains": ["z" * 100_000, "base"]},
    )
    (text,) = texts(long)
    assert long.is_error and len(text) < 1_000 and "(100,000 characters)" in text


async def test_wallet_portfolio_counts_a_chain_named_many_ways_once(app_server: AppServer) -> None:
    wallet = app_server.rpc.vectors.wallet

    async def total(chains: list[str]) -> float:
        body = ok(await call(app_server, "wallet_portfolio", {"address": wallet, "chains": chains}))
        return float(body["total_value_usd"])

    single = await total(["ethereum"])
    assert single > 0
    for chains in (["eth", "ethereum", "mainnet"], ["ethereum"] * 10, [" ETH ", "MainNet"]):
        assert await total(chains) == single, chains


async def test_concurrent_calls_on_one_session(app_server: AppServer) -> None:
    async with Client(app_server.mcp_url) as client:
        results = await asyncio.gather(
            client.call_tool("search_vaults", {"chain": "base", "per_page": 3}),
            client.call_tool("top_yields", {"limit": 3}),
            client.call_tool("search_protocols", {"limit": 3}),
            client.call_tool("wallet_portfolio", {"address": app_server.rpc.vectors.wallet}),
            client.call_tool("search_vaults", {"min_tvl_usd": -1}),
        )
    assert [r.is_error for r in results] == [False, False, False, False, True]
    assert all(v["chain"] == "base" for v in ok(results[0])["vaults"])
    assert ok(results[3])["total_value_usd"] == pytest.approx(8500.5)


@pytest.mark.parametrize("query", ["silo", "zzzqqq", "uniswap-v9"])
async def test_search_protocols_returns_nothing_when_no_protocol_matches(
    app_server: AppServer, query: str
) -> None:
    result = await call(app_server, "search_protocols", {"query": query})
    data = ok(result)
    assert data["protocols"] == []
    assert texts(result)[0].startswith("No protocol matches.")
    named = {
        v.protocol
        for v in active_vaults(app_server.store)
        if query in v.name.lower().replace(" ", "")
    }
    # Vaults of other protocols that merely carry the name are pointed at, not listed.
    assert set(data["named_in_vaults"]) <= named
    if query == "silo":
        assert data["named_in_vaults"]


async def test_search_protocols_matches_the_protocol_a_user_names(app_server: AppServer) -> None:
    data = ok(await call(app_server, "search_protocols", {"query": "Curve Finance"}))
    assert {p["protocol"] for p in data["protocols"]} == {"curve-dex", "curve-llamalend"}
    data = ok(await call(app_server, "search_protocols", {"query": "aave"}))
    assert {p["protocol"] for p in data["protocols"]} == {"aave-v3", "aave-v4"}
    data = ok(await call(app_server, "search_protocols", {"query": "Aave V4"}))
    assert [p["protocol"] for p in data["protocols"]] == ["aave-v4"]


async def raw_call(server: AppServer, body: bytes) -> dict[str, Any]:
    """A `tools/call` POST as raw JSON-RPC (Python's json writes Infinity, as some clients do)."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "search_vaults",
    }
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(server.mcp_url, content=body, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_infinity_and_long_values_are_refused_briefly_without_a_traceback(
    app_server: AppServer, caplog: pytest.LogCaptureFixture
) -> None:
    for arguments in ({"min_tvl_usd": float("inf")}, {"min_apy": float("nan")}):
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "search_vaults",
                    "arguments": arguments,
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                },
            }
        ).encode()
        assert b"Infinity" in body or b"NaN" in body
        answer = await raw_call(app_server, body)
        result = answer["result"]
        assert result["isError"], answer
        [name] = arguments
        assert f"{name}: Input should be a finite number" in result["content"][0]["text"]
    # A chain of 100,000 characters is quoted by its first 40 only.
    long = await call(app_server, "search_vaults", {"chain": "x" * 100_000})
    (text,) = texts(long)
    assert long.is_error and len(text) < 1_000 and "(100,000 characters)" in text
    assert not [r for r in caplog.records if r.exc_info], "no traceback in the log"


async def test_a_ranking_by_highest_apy_leaves_out_likely_outliers_and_says_so(
    app_server: AppServer,
) -> None:
    vaults = active_vaults(app_server.store)

    def flagged(v: Vault) -> bool:
        return is_outlier(v.apy, v.security_inputs.source_flags if v.security_inputs else None)

    plausible = sorted(
        (v.apy for v in vaults if v.apy is not None and v.tvl_usd is not None and not flagged(v)),
        reverse=True,
    )
    outliers = [v for v in vaults if v.apy is not None and v.apy > 1000]
    assert any(flagged(v) and v.apy is not None and v.apy <= 1000 for v in vaults), (
        "the recorded pools hold one DefiLlama flags though its APY is not absurd"
    )
    assert outliers, "the recorded pools hold at least one APY above 1,000%"
    ranked = await call(app_server, "search_vaults", {"sort_by": "apy", "per_page": 20})
    found = ok(ranked)
    assert [v["apy"] for v in found["vaults"]] == pytest.approx(plausible[:20], rel=1e-6)
    assert "Left out as likely outliers" in texts(ranked)[0]
    # Asked for, they lead, and each is labelled.
    asked = await call(
        app_server, "search_vaults", {"sort_by": "apy", "per_page": 5, "include_outliers": True}
    )
    top = ok(asked)["vaults"][0]
    assert top["apy"] == pytest.approx(max(v.apy for v in outliers), rel=1e-6)
    first_line = texts(asked)[0].splitlines()[1]
    assert first_line.startswith(f"- {top['name']} [") and "; likely outlier;" in first_line
    assert "Left out" not in texts(asked)[0]
    # A caller's own APY bound is kept as given: nothing is left out behind it.
    bounded = await call(app_server, "search_vaults", {"sort_by": "apy", "max_apy": 50})
    assert "Left out" not in texts(bounded)[0]
    # Where only left-out vaults match (here: TVL unknown), they are shown and said to be,
    # still none above 1,000 %.
    unknown_tvl = [v for v in vaults if v.tvl_usd is None and v.apy is not None and v.apy <= 1000]
    assert unknown_tvl, "the recordings hold vaults without a TVL"
    chain, protocol = unknown_tvl[0].chain, unknown_tvl[0].protocol
    expected = [
        v
        for v in vaults
        if (v.chain, v.protocol) == (chain, protocol) and v.apy is not None and v.apy <= 1000
    ]
    assert all(v.tvl_usd is None or flagged(v) for v in expected)
    only = await call(
        app_server,
        "search_vaults",
        {"chain": chain, "protocol": protocol, "sort_by": "apy", "per_page": 50},
    )
    shown = ok(only)
    assert shown["found"] == len(expected) and all(v["apy"] <= 1000 for v in shown["vaults"])
    assert "Only vaults usually left out of APY rankings match" in texts(only)[0]


async def test_analyze_yield_says_whether_the_apy_holds_from_the_source_trend(
    app_server: AppServer,
) -> None:
    # Both recordings' spellings carry the trend: camelCase with a predictions object, and
    # snake_case with the predictions written as a Python dict's text.
    with_trend = [
        v
        for v in active_vaults(app_server.store)
        if v.trend is not None and v.trend.prediction is not None and v.apy
    ]
    assert {v.trend.reward_tokens != [] for v in with_trend if v.trend} == {True, False}
    down = [
        v
        for v in with_trend
        if v.trend and v.trend.prediction and v.trend.prediction.predicted_class == "Down"
    ]
    for vault in (with_trend[0], *down[:1]):
        assert vault.trend is not None and vault.trend.prediction is not None
        result = await call(app_server, "analyze_yield", {"vault_id": vault.id})
        data = ok(result)
        text = texts(result)[0]
        assert data["trend"]["prediction"]["predicted_class"] == (
            vault.trend.prediction.predicted_class
        )
        if vault.trend.apy_mean_30d is not None:
            assert f"30-day mean APY {vault.trend.apy_mean_30d:.2f}%" in text
        assert f"DefiLlama's forecast: {vault.trend.prediction.predicted_class}" in text
        assert data["sustainable"] is not None
        verdict = "Likely to hold" if data["sustainable"] else "Not likely to hold"
        assert f"Sustainable? {verdict}: " in text
        # The verdict follows its reasons, each a figure the source gave.
        against = [r for r in data["sustainable_because"] if "forecasts Down" in r]
        if against and (vault.trend.prediction.probability or 0) >= 60:
            assert data["sustainable"] is False
