"""The platform services over real HTTP: uvicorn on loopback, httpx as the client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from albert.tools.addresses import to_checksum_address
from data_server.market import load_market_snapshot
from data_server.platform import PlatformData, platform_app
from data_server.platform.data import ADDRESSES, DEX_PAIRS, FIXTURES
from tests.data_server.platform.live_server import serve

PEPE = "0x6982508145454Ce325dDbE47a25d4ec3d2311933"
BYBIT_EXPLOITER = "0x47666Fab8bd0Ac7003bce3f5C3585383F09486E2"
UNKNOWN = "0x1111111111111111111111111111111111111111"
WOOD_MINT = "Ao3fKu6s2jH2vFHLWUchgf4mPWQ7G4FEttHa1xXv7Wio"


def _fixture(name: str) -> object:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _market_row(coin_id: str) -> dict:
    return load_market_snapshot().rows[coin_id].model_dump()


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(platform_app()) as url:
        yield url


@pytest.fixture
async def http(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=5) as client:
        yield client


async def test_pepe_by_symbol(http: httpx.AsyncClient) -> None:
    row = _market_row("pepe")
    response = await http.get("/tokens/search", params={"symbol": "pepe"})
    assert response.status_code == 200
    body = response.json()
    assert body["symbol"] == "PEPE"
    token = body["results"][0]
    assert token["identity"] == {
        "name": "Pepe",
        "symbol": "PEPE",
        "coingecko_id": "pepe",
        "chain": "ethereum",
        "address": PEPE,
        "contracts": [{"chain": "ethereum", "address": PEPE}],
    }
    market = token["market"]
    assert market["price_usd"] == row["current_price"]
    assert market["market_cap_usd"] == row["market_cap"]
    assert market["market_cap_rank"] == row["market_cap_rank"]
    assert market["ath_date"] == row["ath_date"]
    assert market["as_of"] == row["last_updated"]
    assert token["supply"]["circulating_share_pct"] == pytest.approx(
        100 * row["circulating_supply"] / row["max_supply"]
    )
    # Every graded note carries the numbers it was computed from.
    notes = token["risk"]["notes"]
    assert {n["category"] for n in notes} == {"volatility", "liquidity", "concentration"}
    drawdown = next(n for n in notes if "ath_change_pct" in n["figures"])
    assert drawdown["figures"]["ath_change_pct"] == row["ath_change_percentage"]
    turnover = next(n for n in notes if "volume_to_market_cap" in n["figures"])
    assert turnover["figures"]["volume_to_market_cap"] == pytest.approx(
        row["total_volume"] / row["market_cap"], abs=1e-4
    )
    assert token["risk"]["level"] in {"low", "moderate", "high"}
    assert token["liquidity"]["pairs"] == []
    assert "No DEX pair" in token["liquidity"]["note"]


async def test_token_by_lowercase_address_is_normalised(http: httpx.AsyncClient) -> None:
    response = await http.get(f"/tokens/ethereum/{PEPE.lower()}")
    assert response.status_code == 200
    assert response.json()["identity"]["address"] == PEPE


async def test_token_address_with_bad_checksum_is_400(http: httpx.AsyncClient) -> None:
    bad = PEPE.replace("Ce325", "cE325")
    response = await http.get(f"/tokens/ethereum/{bad}")
    assert response.status_code == 400
    assert "EIP-55 checksum" in response.json()["error"]


async def test_unknown_chain_and_unknown_token(http: httpx.AsyncClient) -> None:
    response = await http.get(f"/tokens/mars/{PEPE}")
    assert response.status_code == 400
    assert "supported: ethereum" in response.json()["error"]
    response = await http.get(f"/tokens/ethereum/{UNKNOWN}")
    assert response.status_code == 404
    assert response.json()["error"] == f"no token on record at {UNKNOWN} on ethereum"
    response = await http.get("/tokens/search", params={"symbol": "NOSUCHCOIN"})
    assert response.status_code == 404
    response = await http.get("/tokens/search")
    assert response.status_code == 400


async def test_dex_only_token_reads_thin_liquidity(http: httpx.AsyncClient) -> None:
    pair = _fixture(DEX_PAIRS)["pairs"][0]  # type: ignore[index]
    response = await http.get(f"/tokens/solana/{WOOD_MINT}")
    assert response.status_code == 200
    token = response.json()
    assert token["identity"]["symbol"] == "WOOD"
    assert token["liquidity"]["total_dex_liquidity_usd"] == pair["liquidity"]["usd"]
    liquidity_note = next(
        n for n in token["risk"]["notes"] if "total_dex_liquidity_usd" in n["figures"]
    )
    assert liquidity_note["severity"] == "high"
    assert token["risk"]["level"] == "high"


async def test_known_exploiter_address(http: httpx.AsyncClient) -> None:
    response = await http.get(f"/addresses/{BYBIT_EXPLOITER.lower()}")
    assert response.status_code == 200
    body = response.json()
    assert body["address"] == BYBIT_EXPLOITER
    assert body["known"] is True
    assert "Bybit Exploiter" in body["labels"]
    assert body["risk_level"] == "critical"
    assert all(flag["source"] and flag["reason"] for flag in body["risk_flags"])
    assert body["first_seen"] == "2025-02-21"


async def test_unknown_address_is_an_honest_no_data(http: httpx.AsyncClient) -> None:
    response = await http.get(f"/addresses/{UNKNOWN}")
    assert response.status_code == 200
    body = response.json()
    assert body["known"] is False
    assert body["risk_level"] == "unknown"
    assert body["labels"] == [] and body["risk_flags"] == [] and body["facts"] == []
    assert body["activity_counts"] is None and body["tokens_held"] is None
    assert body["first_seen"] is None and body["last_seen"] is None
    assert "No data on record" in body["summary"]


async def test_token_contract_address_links_to_the_token(http: httpx.AsyncClient) -> None:
    body = (await http.get(f"/addresses/{PEPE}")).json()
    assert body["known"] is True
    assert body["token"]["symbol"] == "PEPE"
    assert "Token contract: Pepe (PEPE)" in body["labels"]


async def test_address_errors(http: httpx.AsyncClient) -> None:
    response = await http.get(f"/addresses/{WOOD_MINT}")
    assert response.status_code == 400
    assert "Solana addresses are not supported" in response.json()["error"]
    response = await http.get(f"/addresses/{BYBIT_EXPLOITER.replace('Fab8', 'fAb8')}")
    assert response.status_code == 400
    assert "checksum" in response.json()["error"]
    response = await http.get("/addresses/0x1234")
    assert response.status_code == 400
    assert "got 4" in response.json()["error"]
    # A long value is quoted by its start, never whole.
    for path in (f"/addresses/0x{'z' * 5_000}", f"/tokens/ethereum/{'q' * 5_000}"):
        response = await http.get(path)
        assert response.status_code == 400, path
        error = response.json()["error"]
        assert len(error) < 400 and "characters)" in error, error[:500]


async def test_feed_ranks_aave_items_first(http: httpx.AsyncClient) -> None:
    response = await http.get("/feed/search", params={"q": "aave", "limit": 10})
    assert response.status_code == 200
    hits = response.json()["hits"]
    assert hits, "expected Aave items"
    assert "AAVE" in hits[0]["item"]["tokens"]
    assert "aave" in hits[0]["item"]["title"].lower()
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    # An item naming Aave only in passing ranks below items about Aave.
    titles = [h["item"]["title"] for h in hits]
    passing = titles.index("Lending markets in a sell-off: what to watch")
    assert all("aave" in t.lower() for t in titles[:passing])


async def test_feed_question_and_token_filter(http: httpx.AsyncClient) -> None:
    body = (
        await http.get("/feed/search", params={"q": "what is the market saying about aave"})
    ).json()
    assert "AAVE" in body["hits"][0]["item"]["tokens"]
    body = (await http.get("/feed/search", params={"q": "bitcoin", "token": "btc"})).json()
    assert body["token"] == "BTC"
    assert body["hits"] and all("BTC" in h["item"]["tokens"] for h in body["hits"])
    recorded = (await http.get("/feed/search", params={"q": "bybit hack"})).json()["hits"][0]
    assert recorded["item"]["provenance"] == "recorded"
    assert recorded["item"]["url"].startswith("https://cryptopanic.com/news/")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "aave", "limit": "0"}, "between 1 and 20"),
        ({"q": "aave", "limit": "21"}, "between 1 and 20"),
        ({"q": "aave", "limit": "ten"}, "must be an integer"),
        ({}, "give a query"),
        ({"q": "x" * 201}, "longer than 200"),
    ],
)
async def test_feed_bad_requests(http: httpx.AsyncClient, params: dict, message: str) -> None:
    response = await http.get("/feed/search", params=params)
    assert response.status_code == 400
    assert message in response.json()["error"]


async def test_unknown_endpoint_is_json_404(http: httpx.AsyncClient) -> None:
    response = await http.get("/nope")
    assert response.status_code == 404
    assert response.json() == {"error": "no such endpoint"}


def test_curated_addresses_pass_their_checksums() -> None:
    addresses = _fixture(ADDRESSES)["addresses"]  # type: ignore[index]
    for entry in addresses:
        assert to_checksum_address(entry["address"]) == entry["address"]


def test_every_contract_points_at_a_market_row() -> None:
    data = PlatformData.from_fixtures()
    ids = {row.id for row in data.markets}
    assert {c.coingecko_id for c in data.contracts} <= ids
