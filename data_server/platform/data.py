"""The records behind the platform services, loaded from the fixture files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from albert.tools.addresses import EVM_CHAINS, to_checksum_address
from albert.tools.platform_client import AddressProfile, FeedItem
from data_server.market import MarketRow, MarketSnapshot, load_market_snapshot

FIXTURES = Path(__file__).parent / "fixtures"

DEX_PAIRS = "dexscreener_pairs_solana_raydium_7xck.json"
ADDRESSES = "addresses_curated.json"
FEED_RECORDED = "cryptopanic_posts_2025-02-26_hammadAuthornate.json"
FEED_CURATED = "feed_curated.json"


class Record(BaseModel):
    """Base of fixture records: unknown upstream fields are ignored."""

    model_config = ConfigDict(extra="ignore")


class ContractRecord(Record):
    """A token's contract on one chain (address stored in checksum form for EVM chains)."""

    coingecko_id: str
    chain: str
    address: str


class PairToken(Record):
    """A token side of a DexScreener pair."""

    address: str
    name: str
    symbol: str


class PairRecord(Record):
    """One DexScreener pair (the fields we use)."""

    chain_id: str = Field(alias="chainId")
    dex_id: str = Field(alias="dexId")
    url: str | None = None
    pair_address: str = Field(alias="pairAddress")
    base_token: PairToken = Field(alias="baseToken")
    quote_token: PairToken = Field(alias="quoteToken")
    price_usd: float | None = Field(None, alias="priceUsd")
    txns: dict[str, dict[str, int]] = Field(default_factory=dict)
    volume: dict[str, float] = Field(default_factory=dict)
    price_change: dict[str, float] = Field(default_factory=dict, alias="priceChange")
    liquidity: dict[str, float] = Field(default_factory=dict)
    fdv: float | None = None
    pair_created_at: int | None = Field(None, alias="pairCreatedAt")


class AddressRecord(AddressProfile):
    """What is on record about one address: the shared contract's profile, as a fixture holds it.

    Unknown fields are ignored, as for every fixture record.
    """


class PlatformData(BaseModel):
    """Everything the services answer from; build one in tests to control the data."""

    markets: list[MarketRow] = Field(default_factory=list)
    markets_source: str = "CoinGecko /coins/markets"
    contracts: list[ContractRecord] = Field(default_factory=list)
    pairs: list[PairRecord] = Field(default_factory=list)
    pairs_source: str = "DexScreener pairs"
    addresses: list[AddressRecord] = Field(default_factory=list)
    feed: list[FeedItem] = Field(default_factory=list)

    @classmethod
    def from_fixtures(
        cls, folder: Path = FIXTURES, market: MarketSnapshot | None = None
    ) -> PlatformData:
        """Load the recorded and curated fixture files (see fixtures/README.md).

        Market rows and contract addresses come from the shared market snapshot, the same
        facts the token index is built from.
        """
        market = market or load_market_snapshot()
        contracts = [
            _normalised_contract(ContractRecord(coingecko_id=coin_id, chain=chain, address=address))
            for coin_id, listing in market.listings.items()
            for chain, address in listing.contracts()
            if chain in (*EVM_CHAINS, "solana")
        ]
        pairs = [PairRecord.model_validate(p) for p in _read(folder / DEX_PAIRS)["pairs"]]
        addresses = [
            AddressRecord.model_validate(a) for a in _read(folder / ADDRESSES)["addresses"]
        ]
        feed = [_cryptopanic_item(p) for p in _read(folder / FEED_RECORDED)["results"]]
        feed += [
            FeedItem.model_validate({**item, "provenance": "curated"})
            for item in _read(folder / FEED_CURATED)["items"]
        ]
        return cls(
            markets=list(market.rows.values()),
            contracts=contracts,
            pairs=pairs,
            pairs_source="DexScreener latest/dex/pairs, recorded 2023-12-11",
            addresses=addresses,
            feed=feed,
        )


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _normalised_contract(record: ContractRecord) -> ContractRecord:
    if record.chain == "solana":
        return record
    return record.model_copy(update={"address": to_checksum_address(record.address)})


def _cryptopanic_item(post: dict[str, Any]) -> FeedItem:
    """A CryptoPanic /posts result as a feed item; its currency codes become the tokens."""
    source = post.get("source") or {}
    codes: list[str] = []
    for currency in post.get("currencies") or []:
        code = str(currency.get("code", "")).upper()
        if code and code not in codes:
            codes.append(code)
    return FeedItem(
        id=f"cryptopanic-{post['id']}",
        title=post["title"],
        body=None,
        url=post.get("url"),
        source=source.get("title") or post.get("domain") or "unknown",
        source_domain=source.get("domain") or post.get("domain"),
        kind=post.get("kind", "news"),
        published_at=post["published_at"],
        tokens=codes,
        provenance="recorded",
    )


def parse_time(value: str | None) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime, or None when absent or malformed."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
