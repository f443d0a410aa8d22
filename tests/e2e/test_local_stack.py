"""`albert dev` as a user runs it: Typesense, demo data, data server and worker, no model key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from albert.ai.planner import LABEL
from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess

DEEP_LINK = re.compile(r"https://app\.albert\.example/token/(\w+)/(0x[0-9a-fA-F]{40}|\w+)")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("stack")
    process = RuntimeProcess(state, command="dev")
    with process.start(timeout=120):
        yield process


def tool_calls(frames: list[dict]) -> list[dict]:
    return [f for f in frames if f["type"] == "tool_call"]


async def test_the_demo_planner_answers_from_real_tools(stack: RuntimeProcess) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "What is PEPE?")
        assert [c["name"] for c in tool_calls(frames)] == ["analyze_token"]
        text = answer_text(frames)
        assert text.startswith(LABEL)
        assert "0x6982508145454Ce325dDbE47a25d4ec3d2311933" in text
        frames = await client.turn(thread, "What is the market saying about Aave?")
        assert tool_calls(frames)[0]["name"] == "search_feed"
        assert "Aave" in answer_text(frames)


async def test_structured_token_search_pages_through_typesense_with_deep_links(stack) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "tokens over $1M market cap ranked by token ranking")
        call = tool_calls(frames)[0]
        assert call["name"] == "search_tokens"
        assert call["arguments"] == {"min_market_cap_usd": 1_000_000.0, "sort_by": "rank"}
        first = DEEP_LINK.findall(answer_text(frames))
        assert len(first) == 10
        frames = await client.turn(
            thread, "tokens over $1M market cap ranked by token ranking, page 2"
        )
        assert tool_calls(frames)[0]["arguments"]["page"] == 2
        second = DEEP_LINK.findall(answer_text(frames))
        assert 0 < len(second) <= 10
        assert not set(first) & set(second)
        # Each link names the token's real chain and contract, as the index holds them.
        result = next(f for f in frames if f["type"] == "tool_result")
        for chain, address in second:
            assert f"{chain}/{address}" in result["content"]


async def test_stablecoin_screen_compiles_to_the_documented_filter(stack) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "stablecoins over $1M market cap on ethereum")
        assert tool_calls(frames)[0]["arguments"] == {
            "chain": "ethereum",
            "stablecoin": True,
            "min_market_cap_usd": 1_000_000.0,
        }
        links = DEEP_LINK.findall(answer_text(frames))
        assert links and all(chain == "ethereum" for chain, _ in links)
        assert "USDT" in answer_text(frames)
