"""Seed documents for the `tokens` collection, built from the shared market snapshot
(`data_server.market`: recorded CoinGecko rows and the deployments table) and the recorded
DexScreener response in `fixtures/` (sources and derivations in fixtures/README.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from albert.search.typesense_client import ImportSummary, TypesenseClient
from data_server.market import MarketSnapshot, load_market_snapshot
from data_server.market.snapshot import updated_at
from data_server.tokens.authenticity import METHOD, MarketFacts, authenticity_score
from data_server.tokens.schema import TOKENS_COLLECTION, UNRANKED, tokens_schema

FIXTURES = Path(__file__).parent / "fixtures"
DEXSCREENER_FILE = "pairs_response_solana_raydium_7xck.json"
# The DexScreener response carries no capture time; this is the date of the commit that
# recorded it (see fixtures/README.md).
DEXSCREENER_AS_OF = "2023-12-11T00:00:00Z"


class TokenDocument(BaseModel):
    """One document of the `tokens` collection; None fields are left out of the index."""

    model_config = ConfigDict(extra="forbid")

    id: str
    chain: str
    address: str
    symbol: str
    name: str
    rank: int = Field(description=f"market-cap rank; {UNRANKED} when the source has none")
    price_usd: float | None = None
    marketcap: float | None = None
    fdv: float | None = None
    liquidity: float | None = None
    volume_24h: float | None = None
    vol_mcap_ratio: float | None = None
    authenticity_score: int = Field(ge=0, le=100)
    holders: int | None = None
    stablecoin: bool = False
    price_change_1h: float | None = None
    price_change_24h: float | None = None
    price_change_7d: float | None = None
    image: str | None = None
    coingecko_id: str | None = None
    source: str
    as_of: int = Field(description="unix seconds of the source's last update")
    authenticity_method: str = METHOD

    def to_index(self) -> dict[str, Any]:
        """The JSON document sent to Typesense."""
        return self.model_dump(exclude_none=True)


class SeedResult(BaseModel):
    """What `seed_tokens` did."""

    collection: str
    documents: int
    imported: ImportSummary
    num_documents: int


def doc_id(chain: str, address: str) -> str:
    """Document id of a deployment: `<chain>:<address>`, EVM addresses lower-cased."""
    return f"{chain}:{address.lower() if address.startswith('0x') else address}"


def _unix(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC).timestamp())


def _load_json(name: str, fixtures: Path) -> Any:
    return json.loads((fixtures / name).read_text())


def _coingecko_documents(market: MarketSnapshot) -> list[TokenDocument]:
    docs: list[TokenDocument] = []
    for coin_id, listing in market.listings.items():
        row = market.rows[coin_id]
        mcap = row.market_cap or None
        volume = row.total_volume
        fdv = row.fully_diluted_valuation or None
        rank = row.market_cap_rank
        score = authenticity_score(
            MarketFacts(rank=rank, marketcap=mcap, fdv=fdv, volume_24h=volume)
        )
        for chain, address in listing.deployments:
            docs.append(
                TokenDocument(
                    id=doc_id(chain, address),
                    chain=chain,
                    address=address,
                    symbol=row.symbol.upper(),
                    name=row.name,
                    rank=rank if rank is not None else UNRANKED,
                    price_usd=row.current_price,
                    marketcap=mcap,
                    fdv=fdv,
                    volume_24h=volume,
                    vol_mcap_ratio=(volume / mcap) if (mcap and volume is not None) else None,
                    authenticity_score=score,
                    stablecoin=listing.stablecoin,
                    price_change_1h=row.price_change_percentage_1h_in_currency,
                    price_change_24h=row.price_change_percentage_24h,
                    price_change_7d=row.price_change_percentage_7d_in_currency,
                    image=row.image,
                    coingecko_id=coin_id,
                    source="coingecko",
                    as_of=int(updated_at(row).timestamp()),
                )
            )
    return docs


def _dexscreener_documents(fixtures: Path) -> list[TokenDocument]:
    docs: list[TokenDocument] = []
    for pair in _load_json(DEXSCREENER_FILE, fixtures)["pairs"]:
        base = pair["baseToken"]
        trades = pair.get("txns", {}).get("h24", {})
        liquidity = pair.get("liquidity", {}).get("usd")
        volume = pair.get("volume", {}).get("h24")
        fdv = pair.get("fdv")
        change = pair.get("priceChange", {})
        score = authenticity_score(
            MarketFacts(
                rank=None,
                marketcap=pair.get("marketCap"),
                fdv=fdv,
                volume_24h=volume,
                liquidity=liquidity,
                trades_24h=(trades.get("buys", 0) + trades.get("sells", 0)) if trades else None,
            )
        )
        mcap = pair.get("marketCap")
        docs.append(
            TokenDocument(
                id=doc_id(pair["chainId"], base["address"]),
                chain=pair["chainId"],
                address=base["address"],
                symbol=base["symbol"].upper(),
                name=base["name"],
                rank=UNRANKED,
                price_usd=float(pair["priceUsd"]) if pair.get("priceUsd") else None,
                marketcap=mcap,
                fdv=fdv,
                liquidity=liquidity,
                volume_24h=volume,
                vol_mcap_ratio=(volume / mcap) if (mcap and volume is not None) else None,
                authenticity_score=score,
                price_change_1h=change.get("h1"),
                price_change_24h=change.get("h24"),
                source="dexscreener",
                as_of=_unix(DEXSCREENER_AS_OF),
            )
        )
    return docs


def build_token_documents(
    fixtures: Path = FIXTURES, market: MarketSnapshot | None = None
) -> list[TokenDocument]:
    """Every seed document, in a stable order (deployments-table order, then DEX pairs)."""
    docs = _coingecko_documents(market or load_market_snapshot()) + _dexscreener_documents(fixtures)
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise ValueError(f"duplicate token document id {d.id!r}")
        seen.add(d.id)
    return docs


async def seed_tokens(
    client: TypesenseClient,
    collection: str = TOKENS_COLLECTION,
    fixtures: Path = FIXTURES,
) -> SeedResult:
    """Create the collection if missing and upsert every seed document; safe to run again."""
    docs = build_token_documents(fixtures)
    await client.ensure_collection(tokens_schema(collection))
    summary = await client.import_documents(collection, [d.to_index() for d in docs])
    if not summary.all_ok:
        first = summary.failures[0]
        raise RuntimeError(f"{len(summary.failures)} token documents refused, first: {first.error}")
    info = await client.retrieve_collection(collection)
    return SeedResult(
        collection=collection,
        documents=len(docs),
        imported=summary,
        num_documents=info.num_documents,
    )
