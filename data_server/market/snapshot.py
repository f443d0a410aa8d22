"""The market snapshot: the newest recorded CoinGecko row of each coin, and its deployments."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

FIXTURES = Path(__file__).parent / "fixtures"

# Each recorded /coins/markets response, with the label that answers name as their source.
RECORDINGS: dict[str, str] = {
    "coins_markets_top100_usd_2025-12-29_ajarek.json": (
        "CoinGecko /coins/markets (USD), recorded 2025-12-29"
    ),
    "coingecko_markets_usd_2024-08-15_edwinogbu.json": (
        "CoinGecko /coins/markets (USD), recorded 2024-08-15"
    ),
    "coins_markets_usd_2023-01-02_gusgoros.json": (
        "CoinGecko /coins/markets (USD), recorded 2023-01-02"
    ),
}
DEPLOYMENTS = "deployments.json"
NATIVE = "native"


class MarketRow(BaseModel):
    """One CoinGecko /coins/markets row (vs_currency=usd); unknown upstream fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    id: str
    symbol: str
    name: str
    current_price: float | None = None
    market_cap: float | None = None
    market_cap_rank: int | None = None
    fully_diluted_valuation: float | None = None
    total_volume: float | None = None
    high_24h: float | None = None
    low_24h: float | None = None
    price_change_percentage_1h_in_currency: float | None = None
    price_change_percentage_24h: float | None = None
    price_change_percentage_7d_in_currency: float | None = None
    market_cap_change_percentage_24h: float | None = None
    circulating_supply: float | None = None
    total_supply: float | None = None
    max_supply: float | None = None
    ath: float | None = None
    ath_change_percentage: float | None = None
    ath_date: str | None = None
    atl: float | None = None
    atl_change_percentage: float | None = None
    atl_date: str | None = None
    image: str | None = None
    last_updated: str | None = None
    source: str | None = Field(
        None, description="the recording this row was read from (set by the loader)"
    )


class CoinListing(BaseModel):
    """Where a coin lives: `(chain, address)` pairs, `native` for a chain's own gas coin."""

    model_config = ConfigDict(extra="forbid")

    stablecoin: bool = False
    deployments: list[tuple[str, str]]

    def contracts(self) -> list[tuple[str, str]]:
        """The deployments that are token contracts (not a chain's native coin)."""
        return [(chain, address) for chain, address in self.deployments if address != NATIVE]


class MarketSnapshot(BaseModel):
    """Every coin's newest recorded row, and the coins the product lists with their deployments."""

    rows: dict[str, MarketRow]
    listings: dict[str, CoinListing]


def updated_at(row: MarketRow) -> datetime:
    """The row's `last_updated` as an aware datetime (the epoch when it has none)."""
    if not row.last_updated:
        return datetime.fromtimestamp(0, UTC)
    return datetime.fromisoformat(row.last_updated.replace("Z", "+00:00")).astimezone(UTC)


def newest_rows(recordings: dict[str, list[dict[str, Any]]]) -> dict[str, MarketRow]:
    """One row per coin id across recordings (label → raw rows): the latest `last_updated` wins."""
    rows: dict[str, MarketRow] = {}
    for label, raw_rows in recordings.items():
        for raw in raw_rows:
            row = MarketRow.model_validate({**raw, "source": label})
            old = rows.get(row.id)
            if old is None or updated_at(row) > updated_at(old):
                rows[row.id] = row
    return rows


@cache
def load_market_snapshot(folder: Path = FIXTURES) -> MarketSnapshot:
    """Read the recordings and the deployments table once (see fixtures/README.md)."""
    recordings = {label: _read(folder / name) for name, label in RECORDINGS.items()}
    listings = {
        coin_id: CoinListing.model_validate(entry)
        for coin_id, entry in _read(folder / DEPLOYMENTS)["coins"].items()
    }
    rows = newest_rows(recordings)
    missing = sorted(set(listings) - set(rows))
    if missing:
        raise ValueError(f"{DEPLOYMENTS} lists coins absent from the recordings: {missing}")
    return MarketSnapshot(rows=rows, listings=listings)


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
