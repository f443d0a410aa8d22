"""analyze_token, analyze_address and search_feed against the platform services over real HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Mount, Route

from albert.settings import Settings
from albert.tools.address_analysis import address_analysis_tool
from albert.tools.base import LocalTool
from albert.tools.feed_search import feed_search_tool
from albert.tools.token_analysis import token_analysis_tool, usd
from data_server.market import load_market_snapshot
from data_server.platform import platform_app
from tests.data_server.platform.live_server import serve

PEPE = "0x6982508145454Ce325dDbE47a25d4ec3d2311933"
BYBIT_EXPLOITER = "0x47666Fab8bd0Ac7003bce3f5C3585383F09486E2"
UNKNOWN = "0x2222222222222222222222222222222222222222"


@pytest.fixture(scope="module")
def platform_url() -> Iterator[str]:
    # Mounted the way the data server mounts it, so the default URL shape is exercised.
    app = Starlette(routes=[Mount("/platform", app=platform_app())])
    with serve(app) as url:
        yield f"{url}/platform"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def _settings(url: str, timeout: float = 5.0) -> Settings:
    return Settings(platform_api_url=url, tool_timeout_seconds=timeout)


def _pepe_row() -> dict[str, Any]:
    return load_market_snapshot().rows["pepe"].model_dump()


async def test_analyze_pepe_by_symbol(platform_url: str, http: httpx.AsyncClient) -> None:
    tool = token_analysis_tool(_settings(platform_url), http)
    result = await tool.execute({"symbol": "pepe"})
    assert not result.is_error, result.joined_text()
    text = result.joined_text()
    row = _pepe_row()
    assert text.startswith(f"Pepe (PEPE) on ethereum {PEPE}")
    assert f"price {usd(row['current_price'])}" in text
    assert "as of 2024-08-15" in text
    assert "Risk read:" in text and "volatility" in text
    assert result.structured is not None
    assert result.structured["token"]["market"]["market_cap_usd"] == row["market_cap"]
    # No product base URL is set: no page of the token is made up.
    assert result.structured["page_url"] is None
    # Sources are named for people, not by where they sit in the repository.
    assert "data_server/" not in text and "the product's curated deployments list" in text


async def test_analyze_token_by_chain_and_address(
    platform_url: str, http: httpx.AsyncClient
) -> None:
    settings = Settings(
        platform_api_url=platform_url, deep_link_base_url="https://app.albert.test/"
    )
    tool = token_analysis_tool(settings, http)
    result = await tool.execute({"chain": "ethereum", "address": PEPE.lower()})
    assert not result.is_error
    assert result.structured["token"]["identity"]["address"] == PEPE  # type: ignore[index]
    page = f"https://app.albert.test/token/ethereum/{PEPE}"
    assert result.structured["page_url"] == page  # type: ignore[index]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "give a symbol, or both chain and address"),
        ({"symbol": "PEPE", "chain": "ethereum", "address": PEPE}, "not both"),
        ({"chain": "ethereum"}, "give a symbol, or both chain and address"),
        ({"chain": "ethereum", "address": PEPE.replace("Ce3", "cE3")}, "EIP-55 checksum"),
        ({"chain": "mars", "address": PEPE}, "chain: Input should be 'ethereum'"),
        ({"symbol": "PEPE", "amount": 3}, "amount: Extra inputs are not permitted"),
    ],
)
async def test_analyze_token_rejects_bad_arguments(
    platform_url: str, http: httpx.AsyncClient, arguments: dict, message: str
) -> None:
    result = await token_analysis_tool(_settings(platform_url), http).execute(arguments)
    assert result.is_error
    assert message in result.joined_text()


async def test_analyze_token_unknown_symbol(platform_url: str, http: httpx.AsyncClient) -> None:
    result = await token_analysis_tool(_settings(platform_url), http).execute(
        {"symbol": "NOSUCHCOIN"}
    )
    assert result.is_error
    assert "no token with symbol NOSUCHCOIN on record" in result.joined_text()


async def test_analyze_known_address(platform_url: str, http: httpx.AsyncClient) -> None:
    tool = address_analysis_tool(_settings(platform_url), http)
    result = await tool.execute({"address": BYBIT_EXPLOITER.lower()})
    assert not result.is_error
    text = result.joined_text()
    assert text.startswith(f"{BYBIT_EXPLOITER}: Bybit Exploiter")
    assert "Risk level: CRITICAL" in text
    assert "known_exploiter" in text and "source:" in text
    assert result.structured["address"]["risk_level"] == "critical"  # type: ignore[index]


async def test_analyze_unknown_address_says_no_data(
    platform_url: str, http: httpx.AsyncClient
) -> None:
    result = await address_analysis_tool(_settings(platform_url), http).execute(
        {"address": UNKNOWN}
    )
    assert not result.is_error
    text = result.joined_text()
    assert text.startswith(f"{UNKNOWN}: No data on record for this address")
    assert "Risk level" not in text
    assert result.structured["address"]["known"] is False  # type: ignore[index]


@pytest.mark.parametrize(
    ("address", "message"),
    [
        (BYBIT_EXPLOITER.replace("Fab8", "fAb8"), "fails its EIP-55 checksum"),
        ("0x47666Fab8bd0Ac7003bce3f5C3585383F09486", "expected 40 hex digits"),
        ("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "looks like a Solana address"),
    ],
)
async def test_analyze_address_rejects_bad_addresses(
    platform_url: str, http: httpx.AsyncClient, address: str, message: str
) -> None:
    result = await address_analysis_tool(_settings(platform_url), http).execute(
        {"address": address}
    )
    assert result.is_error
    assert message in result.joined_text()


async def test_search_feed_ranks_aave_first(platform_url: str, http: httpx.AsyncClient) -> None:
    tool = feed_search_tool(_settings(platform_url), http)
    result = await tool.execute({"query": "aave", "limit": 3})
    assert not result.is_error
    hits = result.structured["hits"]  # type: ignore[index]
    assert "AAVE" in hits[0]["item"]["tokens"]
    first_line = result.joined_text().splitlines()[1]
    assert first_line.startswith(f"1. {hits[0]['item']['title']}")
    assert "[curated sample, not a news report]" in first_line


async def test_search_feed_with_token_filter_lists_urls(
    platform_url: str, http: httpx.AsyncClient
) -> None:
    result = await feed_search_tool(_settings(platform_url), http).execute(
        {"query": "bitcoin crash", "token": "BTC"}
    )
    assert not result.is_error
    text = result.joined_text()
    assert "https://cryptopanic.com/news/" in text
    assert all("BTC" in h["item"]["tokens"] for h in result.structured["hits"])  # type: ignore[index]


@pytest.mark.parametrize("limit", [0, 21])
async def test_search_feed_limit_bounds(
    platform_url: str, http: httpx.AsyncClient, limit: int
) -> None:
    result = await feed_search_tool(_settings(platform_url), http).execute(
        {"query": "aave", "limit": limit}
    )
    assert result.is_error
    assert "limit" in result.joined_text()


def _tools(settings: Settings, http: httpx.AsyncClient) -> list[tuple[LocalTool, dict]]:
    return [
        (token_analysis_tool(settings, http), {"symbol": "PEPE"}),
        (address_analysis_tool(settings, http), {"address": BYBIT_EXPLOITER}),
        (feed_search_tool(settings, http), {"query": "aave"}),
    ]


async def test_service_down_gives_a_fast_error(http: httpx.AsyncClient, closed_port: int) -> None:
    closed = f"http://127.0.0.1:{closed_port}/platform"
    for tool, arguments in _tools(_settings(closed), http):
        started = time.monotonic()
        result = await tool.execute(arguments)
        assert result.is_error
        assert "unreachable" in result.joined_text()
        assert time.monotonic() - started < 2.0


@pytest.fixture(scope="module")
def slow_url() -> Iterator[str]:
    async def slow(request: Request) -> JSONResponse:
        await asyncio.sleep(0.8)
        return JSONResponse({"error": "too late"}, status_code=500)

    app = Starlette(routes=[Route("/{path:path}", slow)])
    with serve(app) as url:
        yield url


async def test_slow_service_times_out(slow_url: str, http: httpx.AsyncClient) -> None:
    timeout = 0.2
    for tool, arguments in _tools(_settings(slow_url, timeout=timeout), http):
        started = time.monotonic()
        result = await tool.execute(arguments)
        elapsed = time.monotonic() - started
        assert result.is_error
        assert f"timed out after {timeout:g}s" in result.joined_text()
        assert elapsed < 0.7


async def test_every_input_field_is_described(http: httpx.AsyncClient) -> None:
    for tool, _ in _tools(_settings("http://127.0.0.1:1"), http):
        properties = tool.input_schema["properties"]
        assert properties
        for name, schema in properties.items():
            assert len(schema.get("description", "")) > 20, (tool.name, name)
        assert tool.name in {"analyze_token", "analyze_address", "search_feed"}


@pytest.fixture(scope="module")
def broken_url() -> Iterator[str]:
    async def not_json(request: Request) -> PlainTextResponse:
        return PlainTextResponse("<html>oops</html>")

    async def bad_gateway(request: Request) -> PlainTextResponse:
        return PlainTextResponse("upstream down", status_code=502)

    async def wrong_shape(request: Request) -> JSONResponse:
        return JSONResponse({"hits": "not a list"})

    app = Starlette(
        routes=[
            Route("/tokens/search", not_json),
            Route("/addresses/{address}", bad_gateway),
            Route("/feed/search", wrong_shape),
        ]
    )
    with serve(app) as url:
        yield url


async def test_broken_service_answers_become_error_results(
    broken_url: str, http: httpx.AsyncClient
) -> None:
    texts = []
    for tool, arguments in _tools(_settings(broken_url), http):
        result = await tool.execute(arguments)
        assert result.is_error
        texts.append(result.joined_text())
    assert "unexpected response" in texts[0]
    assert "returned HTTP 502" in texts[1]
    assert "unexpected response" in texts[2]


def test_usd_formatting() -> None:
    assert usd(7.99e-06) == "$0.00000799"
    assert usd(3357455158) == "$3.36B"
    assert usd(87270) == "$87,270"
    assert usd(0.5) == "$0.5"
    assert usd(None) == "n/a"
