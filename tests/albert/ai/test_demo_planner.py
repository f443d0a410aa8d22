"""The demo planner reads intents and entities, never question texts it was told about."""

from __future__ import annotations

import json

import httpx
import pytest

from albert.ai.demo_planner import LABEL, DemoPlanner, read_intent, read_intents, unavailable_note
from albert.ai.model import ChatMessage, ChatToolCall, ModelRequest, TextDelta, ToolCallRequest
from albert.settings import Settings
from albert.tools.base import ToolSpec, spec_of
from albert.tools.catalog import build_local_tools


@pytest.fixture(scope="module")
def specs():
    settings = Settings()
    tools = build_local_tools(settings, httpx.AsyncClient())
    return {t.name: spec_of(t) for t in tools}


@pytest.mark.parametrize(
    ("question", "tool", "arguments"),
    [
        ("What is PEPE?", "analyze_token", {"symbol": "PEPE"}),
        ("tell me about $wif", "analyze_token", {"symbol": "WIF"}),
        (
            "Is 0xdAC17F958D2ee523a2206206994597C13D831ec7 risky?",
            "analyze_address",
            {"address": "0xdAC17F958D2ee523a2206206994597C13D831ec7"},
        ),
        ("What is the market saying about Aave?", "search_feed", {"query": "Aave"}),
        (
            "stablecoins over $1M market cap on ethereum, ranked by token ranking",
            "search_tokens",
            {
                "chain": "ethereum",
                "stablecoin": True,
                "min_market_cap_usd": 1_000_000.0,
                "sort_by": "rank",
            },
        ),
        (
            "tokens on base with liquidity above 250k, page 2",
            "search_tokens",
            {"chain": "base", "min_liquidity_usd": 250_000.0, "page": 2},
        ),
        (
            "stablecoins under 2 billion market cap",
            "search_tokens",
            {"stablecoin": True, "max_market_cap_usd": 2e9},
        ),
    ],
)
def test_intents_become_tool_calls(specs, question, tool, arguments) -> None:
    intent = read_intent(question, specs)
    assert intent is not None
    assert (intent.tool, intent.arguments) == (tool, arguments)


def test_only_tools_that_exist_are_called(specs) -> None:
    without_feed = {k: v for k, v in specs.items() if k != "search_feed"}
    intent = read_intent("what is the news about aave", without_feed)
    assert intent is None or intent.tool != "search_feed"
    assert read_intent("what is PEPE?", {}) is None


async def test_plans_a_call_then_renders_the_tool_result_with_its_label(specs) -> None:
    planner = DemoPlanner()
    user = ChatMessage(role="user", content="What is PEPE?")
    first = [
        e async for e in planner.stream(ModelRequest(messages=[user], tools=list(specs.values())))
    ]
    call = next(e.call for e in first if isinstance(e, ToolCallRequest))
    assert call.name == "analyze_token" and json.loads(call.arguments) == {"symbol": "PEPE"}

    result = ChatMessage(
        role="tool", content="PEPE (Pepe) on ethereum: price $0.0000081", tool_call_id=call.id
    )
    assistant = ChatMessage(
        role="assistant",
        tool_calls=[ChatToolCall(id=call.id, name=call.name, arguments=call.arguments)],
    )
    second = [
        e
        async for e in planner.stream(
            ModelRequest(messages=[user, assistant, result], tools=list(specs.values()))
        )
    ]
    text = "".join(e.text for e in second if isinstance(e, TextDelta))
    assert text.startswith(LABEL)
    assert "price $0.0000081" in text
    assert not any(isinstance(e, ToolCallRequest) for e in second)


async def test_unmatched_questions_get_help_not_invention(specs) -> None:
    planner = DemoPlanner()
    request = ModelRequest(
        messages=[ChatMessage(role="user", content="hello there")], tools=list(specs.values())
    )
    text = "".join([e.text async for e in planner.stream(request) if isinstance(e, TextDelta)])
    assert LABEL in text and "Try, for example" in text


def _spec(name: str, *props: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=name,
        parameters={"type": "object", "properties": {p: {"type": "string"} for p in props}},
    )


@pytest.fixture(scope="module")
def with_vaults(specs):
    remote = [
        _spec(
            "search_vaults", "chain", "protocol", "asset_symbol", "stablecoin_only", "min_tvl_usd"
        ),
        _spec("top_yields", "chain", "asset_symbol", "stablecoin_only", "min_tvl_usd"),
        _spec("search_protocols", "query", "chain"),
        _spec("analyze_yield", "vault_id", "history_days"),
        _spec("analyze_risk", "vault_id"),
        _spec("vault_history", "vault_id", "days"),
        _spec("wallet_portfolio", "address", "chains"),
        _spec("wallet_positions", "address", "chains", "min_value_usd"),
        _spec("wallet_top_positions", "address", "chains"),
    ]
    return {**specs, **{s.name: s for s in remote}}


VAULT = "defillama:base:10137e20-efbc-4e15-a733-17ecb52c48e8"
WALLET = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045"


@pytest.mark.parametrize(
    ("question", "calls"),
    [
        (
            "Compare PEPE and SHIB",
            [("analyze_token", {"symbol": "PEPE"}), ("analyze_token", {"symbol": "SHIB"})],
        ),
        ("what's the market cap of MKR right now", [("analyze_token", {"symbol": "MKR"})]),
        (
            f"How risky is vault {VAULT}?",
            [("analyze_risk", {"vault_id": VAULT})],
        ),
        (
            f"APY history of {VAULT} over the last 90 days",
            [("vault_history", {"vault_id": VAULT, "days": 90})],
        ),
        (f"where does the yield of {VAULT} come from", [("analyze_yield", {"vault_id": VAULT})]),
        (f"show my portfolio {WALLET}", [("wallet_portfolio", {"address": WALLET})]),
        (f"biggest holdings of {WALLET}", [("wallet_top_positions", {"address": WALLET})]),
        (
            "best stablecoin yields on arbitrum",
            [("top_yields", {"chain": "arbitrum", "stablecoin_only": True})],
        ),
        (
            "Find ETH vaults on ethereum with at least $10M TVL",
            [("search_vaults", {"chain": "ethereum", "asset_symbol": "ETH", "min_tvl_usd": 1e7})],
        ),
        (
            "Beefy vaults on arbitrum",
            [("search_vaults", {"chain": "arbitrum", "protocol": "beefy"})],
        ),
        ("Tell me about the Aave protocol", [("search_protocols", {"query": "aave"})]),
        (
            "What is the TVL of Aave v3 on ethereum?",
            [("search_protocols", {"query": "aave v3", "chain": "ethereum"})],
        ),
        (
            "which tokens fell more than 3% in the past day?",
            [("search_tokens", {"price_change_window": "24h", "max_price_change_pct": -3.0})],
        ),
        (
            "tokens with authenticity score below 70",
            [("search_tokens", {"max_authenticity_score": 69})],
        ),
        (
            "tokens where daily volume is above 0.2 of market cap",
            [("search_tokens", {"min_vol_mcap_ratio": 0.2})],
        ),
        ("any news on the Bybit hack?", [("search_feed", {"query": "Bybit hack"})]),
    ],
)
def test_entities_and_intents_pick_calls(with_vaults, question, calls) -> None:
    intents = read_intents(question, with_vaults)
    assert [(i.tool, i.arguments) for i in intents] == calls


def test_vault_questions_without_vault_tools_say_so_instead_of_guessing(specs) -> None:
    assert read_intents("USDC vaults on base", specs) == []
    note = unavailable_note("USDC vaults on base", specs)
    assert note is not None and "not available" in note


async def _answer(tool_text: str, specs) -> str:
    user = ChatMessage(role="user", content="What is PEPE?")
    call = ChatToolCall(id="c1", name="analyze_token", arguments='{"symbol": "PEPE"}')
    messages = [
        user,
        ChatMessage(role="assistant", tool_calls=[call]),
        ChatMessage(role="tool", content=tool_text, tool_call_id="c1"),
    ]
    request = ModelRequest(messages=messages, tools=list(specs.values()))
    return "".join(
        [e.text async for e in DemoPlanner().stream(request) if isinstance(e, TextDelta)]
    )


async def test_a_failed_tool_is_rendered_as_what_could_not_be_checked(specs) -> None:
    text = await _answer("Error: analyze_token timed out after 1 s", specs)
    assert "could not check this" in text and "timed out after 1 s" in text


async def test_a_cut_result_says_the_rest_was_not_checked(specs) -> None:
    body = "Pepe (PEPE) " + "x" * 900
    marker = (
        "\n\n[… result cut: 1,000 of 1,030 characters shown. "
        "The rest was not sent to you; say so if it matters.]"
    )
    text = await _answer(body + marker, specs)
    assert "was cut before it reached me (1,000 of 1,030 characters shown)" in text
    assert "could not check the rest" in text
