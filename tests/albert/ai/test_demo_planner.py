"""The demo planner reads intents and entities, never question texts it was told about."""

from __future__ import annotations

import json

import httpx
import pytest

from albert.ai.demo_planner import LABEL, DemoPlanner, read_intent
from albert.ai.model import ChatMessage, ChatToolCall, ModelRequest, TextDelta, ToolCallRequest
from albert.settings import Settings
from albert.tools.base import spec_of
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
