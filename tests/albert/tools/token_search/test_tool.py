"""The search_tokens tool end to end against a real Typesense with the seeded collection."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from albert.settings import Settings
from albert.tools.base import LocalTool, Tool, spec_of
from albert.tools.token_search import TokenSearchQuery, token_deep_link, token_search_tool
from albert.tools.token_search import tool as tool_module
from albert.tools.token_search.query import SortField
from data_server.tokens import schema as tokens_schema_module

from .conftest import SeededTokens

BASE = "https://app.albert.test/"


def _settings(url: str, key: str, **extra: Any) -> Settings:
    return Settings.from_env(
        {"TYPESENSE_URL": url, "TYPESENSE_API_KEY": key, "DEEP_LINK_BASE_URL": BASE, **extra}
    )


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def tool(seeded_tokens: SeededTokens, http: httpx.AsyncClient) -> LocalTool[TokenSearchQuery]:
    settings = _settings(seeded_tokens.url, seeded_tokens.api_key)
    return token_search_tool(settings, http, collection=seeded_tokens.collection)


async def test_ten_per_page_and_paging_covers_everything(
    tool: LocalTool[TokenSearchQuery], seeded_tokens: SeededTokens
) -> None:
    total = len(seeded_tokens.documents)
    assert total > 20  # enough for three pages
    pages = -(-total // 10)
    seen: list[str] = []
    ranks: list[int] = []
    for page in range(1, pages + 1):
        result = await tool.execute({"page": page})
        assert not result.is_error, result.joined_text()
        data = result.structured
        assert data is not None
        hits = data["hits"]
        assert len(hits) == (10 if page < pages else total - 10 * (pages - 1))
        assert data["page"] == page and data["found"] == total
        assert data["total_pages"] == pages
        text = result.joined_text()
        assert f"page {page} of {pages}" in text and f"of {total} found" in text
        if page < pages:
            assert data["next_page"] == page + 1
            assert f"page={page + 1}" in text
        else:
            assert data["next_page"] is None
            assert "last page" in text
        seen += [h["deep_link"] for h in hits]
        ranks += [h["rank"] if h["rank"] is not None else 10**12 for h in hits]
    assert len(seen) == len(set(seen)) == total
    assert ranks == sorted(ranks)  # default order: market-cap rank, unranked last


async def test_deep_links_point_at_each_token(
    tool: LocalTool[TokenSearchQuery], seeded_tokens: SeededTokens
) -> None:
    result = await tool.execute({"query": "usdc", "chain": "base"})
    assert result.structured is not None
    hits = result.structured["hits"]
    assert len(hits) == 1
    hit = hits[0]
    assert hit["symbol"] == "USDC" and hit["chain"] == "base"
    assert hit["address"] == "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    link = "https://app.albert.test/token/base/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    assert hit["deep_link"] == link
    assert link in result.joined_text()
    assert "sorted by relevance, then rank ascending" in result.joined_text()
    # Every link of the full listing matches its own document.
    by_link = {token_deep_link(BASE, d.chain, d.address): d for d in seeded_tokens.documents}
    for page in (1, 2):
        listing = await tool.execute({"page": page})
        assert listing.structured is not None
        for h in listing.structured["hits"]:
            doc = by_link[h["deep_link"]]
            assert (doc.chain, doc.address, doc.symbol) == (h["chain"], h["address"], h["symbol"])


async def test_stablecoins_with_filters(tool: LocalTool[TokenSearchQuery]) -> None:
    result = await tool.execute({"stablecoin": True, "min_market_cap_usd": 1_000_000})
    data = result.structured
    assert data is not None
    assert data["search"]["filter_by"] == "marketcap:>=1000000 && stablecoin:=true"
    assert data["search"]["sort_by"] == "rank:asc"
    assert data["found"] == 11  # USDT on 3 chains, USDC on 7, DAI on 1 (rank 22: page 2)
    assert {h["symbol"] for h in data["hits"]} == {"USDT", "USDC"}
    assert all(h["stablecoin"] for h in data["hits"])
    assert "stablecoin" in result.joined_text()
    assert "sorted by rank ascending" in result.joined_text()
    # Not a ranking asked for: every day of data the hits come from is named.
    assert data["snapshot"] is None and data["data_dates"]

    risky = await tool.execute({"max_authenticity_score": 39})
    assert risky.structured is not None
    assert [h["symbol"] for h in risky.structured["hits"]] == ["WOOD"]
    assert "unranked" in risky.joined_text()

    movers = await tool.execute(
        {"sort_by": "price_change_1h", "chain": "ethereum", "stablecoin": False}
    )
    assert movers.structured is not None
    changes = [h["price_change_1h"] for h in movers.structured["hits"]]
    # A ranking holds only tokens that have the ranked figure, largest first.
    assert changes and None not in changes and changes == sorted(changes, reverse=True)


async def test_a_ranking_is_read_from_one_day_of_data(
    tool: LocalTool[TokenSearchQuery], seeded_tokens: SeededTokens
) -> None:
    result = await tool.execute({"sort_by": "price_change_24h"})
    assert not result.is_error, result.joined_text()
    data = result.structured
    assert data is not None
    days = {time.strftime("%Y-%m-%d", time.gmtime(h["as_of"])) for h in data["hits"]}
    snapshot = data["snapshot"]
    assert days == {snapshot["date"]} and data["data_dates"] == [snapshot["date"]]
    # The newest day of any token with a 24h change, and every such token of that day.
    with_change = [d for d in seeded_tokens.documents if d.price_change_24h is not None]
    newest = max(time.strftime("%Y-%m-%d", time.gmtime(d.as_of)) for d in with_change)
    same_day = [d for d in with_change if time.strftime("%Y-%m-%d", time.gmtime(d.as_of)) == newest]
    assert snapshot["date"] == newest and data["found"] == len(same_day)
    assert snapshot["left_out"] == len(with_change) - len(same_day) > 0
    text = result.joined_text()
    assert text.startswith(f"Data as of {newest}: ranked by 24-hour price change")
    changes = [h["price_change_24h"] for h in data["hits"]]
    assert changes == sorted(changes, reverse=True)


@pytest.mark.parametrize("field", [f.value for f in SortField])
async def test_every_ranking_is_accepted_by_the_index(
    tool: LocalTool[TokenSearchQuery], seeded_tokens: SeededTokens, field: str
) -> None:
    result = await tool.execute({"sort_by": field})
    if all(getattr(d, field) is None for d in seeded_tokens.documents):
        # The recordings have no such figure (a 7-day change, holder counts): refused.
        assert result.is_error and "cannot be ranked" in result.joined_text()
        return
    assert not result.is_error, result.joined_text()
    data = result.structured
    assert data is not None and data["hits"] and len(data["data_dates"]) == 1


async def test_a_ranking_by_a_figure_no_token_has_is_refused(
    tool: LocalTool[TokenSearchQuery], seeded_tokens: SeededTokens
) -> None:
    assert all(d.price_change_7d is None for d in seeded_tokens.documents)
    result = await tool.execute({"sort_by": "price_change_7d", "sort_direction": "asc"})
    assert result.is_error
    assert "No token matching this search has a 7-day price change" in result.joined_text()
    assert "not ranked by another figure in its place" in result.joined_text()
    # Nothing matches at all: the usual empty answer, not a refusal.
    none = await tool.execute(
        {"sort_by": "price_change_7d", "chain": "polygon", "stablecoin": False}
    )
    assert not none.is_error and "No tokens match" in none.joined_text()


async def test_without_a_base_url_no_link_is_made(
    seeded_tokens: SeededTokens, http: httpx.AsyncClient
) -> None:
    settings = Settings.from_env(
        {"TYPESENSE_URL": seeded_tokens.url, "TYPESENSE_API_KEY": seeded_tokens.api_key}
    )
    plain = token_search_tool(settings, http, collection=seeded_tokens.collection)
    result = await plain.execute({"query": "usdc", "chain": "base"})
    assert result.structured is not None
    assert [h["deep_link"] for h in result.structured["hits"]] == [None]
    assert "http" not in result.joined_text()


async def test_no_match_and_past_the_end(tool: LocalTool[TokenSearchQuery]) -> None:
    none = await tool.execute({"chain": "polygon", "stablecoin": False})
    assert not none.is_error
    assert "No tokens match" in none.joined_text()
    assert none.structured is not None and none.structured["found"] == 0
    past = await tool.execute({"page": 50})
    assert not past.is_error
    assert "past the end" in past.joined_text()


async def test_invalid_arguments_are_an_error_result(tool: LocalTool[TokenSearchQuery]) -> None:
    result = await tool.execute({"min_market_cap_usd": 10, "max_market_cap_usd": 1})
    assert result.is_error
    assert "min_market_cap_usd (10) is greater than max_market_cap_usd (1)" in result.joined_text()


async def test_dead_typesense_is_a_quick_error(http: httpx.AsyncClient, closed_port: int) -> None:
    dead = token_search_tool(_settings(f"http://127.0.0.1:{closed_port}", "k"), http)
    started = time.monotonic()
    result = await dead.execute({"query": "eth"})
    assert time.monotonic() - started < 3
    assert result.is_error
    assert "token index unreachable" in result.joined_text()


async def test_silent_typesense_times_out(http: httpx.AsyncClient) -> None:
    # A socket that accepts connections but never answers: the tool must give up on time.
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        settings = _settings(f"http://127.0.0.1:{port}", "k", TOOL_TIMEOUT_SECONDS="1")
        silent = token_search_tool(settings, http)
        started = time.monotonic()
        result = await silent.execute({})
        elapsed = time.monotonic() - started
    assert result.is_error and "timed out" in result.joined_text()
    assert elapsed < 3


async def test_missing_collection_is_an_error_result(
    seeded_tokens: SeededTokens, http: httpx.AsyncClient
) -> None:
    settings = _settings(seeded_tokens.url, seeded_tokens.api_key)
    missing = token_search_tool(settings, http, collection="no_such_collection")
    result = await missing.execute({})
    assert result.is_error and "HTTP 404" in result.joined_text()


def test_tool_spec_and_shared_constants(http: httpx.AsyncClient) -> None:
    tool = token_search_tool(_settings("http://127.0.0.1:1", "k"), http)
    assert isinstance(tool, Tool)
    spec = spec_of(tool)
    assert spec.name == "search_tokens"
    assert spec.parameters == TokenSearchQuery.model_json_schema()
    assert "ten tokens per page" in spec.description
    # The worker keeps its own copies of these (it does not ship the data server package).
    assert tool_module.UNRANKED == tokens_schema_module.UNRANKED
    assert tool_module.TOKENS_COLLECTION == tokens_schema_module.TOKENS_COLLECTION


def test_deep_link_format() -> None:
    assert (
        token_deep_link("https://x.test/", "solana", "So1 2")
        == "https://x.test/token/solana/So1%202"
    )
    assert token_deep_link("https://x.test", "ethereum", "native") == (
        "https://x.test/token/ethereum/native"
    )
    assert token_deep_link("", "ethereum", "native") is None
