"""The typed token-search query the model fills in. The JSON schema of this model is the prompt:
every field says what it means, its unit and its limits."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from albert.tools.base import ToolInput


class Chain(StrEnum):
    """Chains the token index covers (lower-case slugs)."""

    ethereum = "ethereum"
    base = "base"
    arbitrum = "arbitrum"
    optimism = "optimism"
    polygon = "polygon"
    bsc = "bsc"
    avalanche = "avalanche"
    solana = "solana"
    tron = "tron"
    bitcoin = "bitcoin"
    ton = "ton"
    sui = "sui"
    aptos = "aptos"
    near = "near"
    cardano = "cardano"


class SortField(StrEnum):
    """Orders the model may ask for; each maps to one indexed numeric field."""

    rank = "rank"
    marketcap = "marketcap"
    liquidity = "liquidity"
    volume_24h = "volume_24h"
    vol_mcap_ratio = "vol_mcap_ratio"
    authenticity_score = "authenticity_score"
    holders = "holders"
    price_change_1h = "price_change_1h"
    price_change_24h = "price_change_24h"
    price_change_7d = "price_change_7d"


PriceWindow = Literal["1h", "24h", "7d"]
SortDirection = Literal["asc", "desc"]

MAX_PAGE = 1000
MAX_QUERY_CHARS = 200
# Upper sanity limits: far beyond any real token, small enough for Typesense's number parser.
MAX_USD = 1e15
MAX_RATIO = 1e6
MAX_PRICE_CHANGE_PCT = 1e6
MAX_HOLDERS = 10**12

_CHAINS = ", ".join(c.value for c in Chain)

# Common spellings a model may use for a chain; anything else must be an exact slug.
CHAIN_ALIASES: dict[str, Chain] = {
    "eth": Chain.ethereum,
    "mainnet": Chain.ethereum,
    "arb": Chain.arbitrum,
    "arbitrum one": Chain.arbitrum,
    "op": Chain.optimism,
    "matic": Chain.polygon,
    "pol": Chain.polygon,
    "binance": Chain.bsc,
    "bnb": Chain.bsc,
    "bnb chain": Chain.bsc,
    "binance smart chain": Chain.bsc,
    "avax": Chain.avalanche,
    "sol": Chain.solana,
    "btc": Chain.bitcoin,
}


def _invalid(message: str) -> PydanticCustomError:
    """A validation error whose text is exactly `message` (no generic prefix)."""
    return PydanticCustomError("token_query", message)


def default_direction(field: SortField) -> SortDirection:
    """Rank reads best first ascending (1 is the largest); every other field descending."""
    return "asc" if field is SortField.rank else "desc"


def _usd(what: str, bound: str) -> str:
    return (
        f"{bound.capitalize()} {what} in US dollars, a plain number "
        f"(e.g. 1000000 for $1M). Omit for no {bound}."
    )


class TokenSearchQuery(ToolInput):
    """Search the token index by name/symbol and by market filters, ten results per page."""

    query: str | None = Field(
        None,
        max_length=MAX_QUERY_CHARS,
        description=(
            "Free text matched against token name and symbol, typo-tolerant "
            "(e.g. 'usdc', 'wrapped bitcoin'). Omit to list tokens by filters only."
        ),
    )
    chain: Chain | None = Field(
        None,
        description=(
            f"Only tokens deployed on this chain. One of: {_CHAINS}. "
            "Native coins (ETH on ethereum, SOL on solana, ...) are listed on their own chain."
        ),
    )
    min_market_cap_usd: float | None = Field(
        None, description=_usd("market capitalisation", "minimum")
    )
    max_market_cap_usd: float | None = Field(
        None, description=_usd("market capitalisation", "maximum")
    )
    min_liquidity_usd: float | None = Field(
        None,
        description=_usd("DEX pool liquidity", "minimum")
        + " Tokens without a liquidity figure are excluded.",
    )
    max_liquidity_usd: float | None = Field(None, description=_usd("DEX pool liquidity", "maximum"))
    min_vol_mcap_ratio: float | None = Field(
        None,
        description=(
            "Minimum 24h trading volume divided by market cap (0.1 means daily volume is 10% of "
            "market cap). Very high ratios can indicate wash trading."
        ),
    )
    max_vol_mcap_ratio: float | None = Field(
        None, description="Maximum 24h volume / market cap ratio (same unit as the minimum)."
    )
    min_authenticity_score: int | None = Field(
        None,
        description=(
            "Minimum authenticity score, an integer 0-100 (higher = more likely a genuine, "
            "established token; below 40 deserves caution)."
        ),
    )
    max_authenticity_score: int | None = Field(
        None,
        description="Maximum authenticity score, integer 0-100 (e.g. 39 to find risky tokens).",
    )
    min_holders: int | None = Field(
        None,
        description=(
            "Minimum number of holder addresses. Tokens without a holder count are excluded."
        ),
    )
    max_holders: int | None = Field(None, description="Maximum number of holder addresses.")
    stablecoin: bool | None = Field(
        None,
        description="true: only stablecoins; false: exclude stablecoins; omit: both.",
    )
    price_change_window: PriceWindow | None = Field(
        None,
        description=(
            "Time window the price-change bounds apply to: '1h', '24h' or '7d'. Required when "
            "min_price_change_pct or max_price_change_pct is given."
        ),
    )
    min_price_change_pct: float | None = Field(
        None,
        description=(
            "Minimum price change over price_change_window, in percent (5 means +5%, -10 means "
            "-10%). Cannot be below -100."
        ),
    )
    max_price_change_pct: float | None = Field(
        None,
        description=(
            "Maximum price change over price_change_window, in percent "
            "(e.g. -5 for drops of 5% or more)."
        ),
    )
    sort_by: SortField | None = Field(
        None,
        description=(
            "Order of results: rank (market-cap rank, 1 = largest), marketcap, liquidity, "
            "volume_24h, vol_mcap_ratio, authenticity_score, holders, price_change_1h, "
            "price_change_24h, price_change_7d. Omit for best text match (with a query) or rank. "
            "Tokens lacking the sorted figure come last."
        ),
    )
    sort_direction: SortDirection | None = Field(
        None,
        description=(
            "'asc' or 'desc'. Omit for the natural order: ascending for rank (top tokens first), "
            "descending for every other field (largest first)."
        ),
    )
    page: int = Field(
        1,
        ge=1,
        le=MAX_PAGE,
        description=(
            "Result page, 1-based, ten tokens per page. Ask for page 2 to see results 11-20."
        ),
    )

    @field_validator("chain", mode="before")
    @classmethod
    def _normalise_chain(cls, value: object) -> object:
        if isinstance(value, str):
            key = " ".join(value.lower().split())
            return CHAIN_ALIASES.get(key, key)
        return value

    @field_validator("query")
    @classmethod
    def _blank_query_is_none(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = " ".join(value.split())
        return value or None

    @field_validator(
        "min_market_cap_usd",
        "max_market_cap_usd",
        "min_liquidity_usd",
        "max_liquidity_usd",
        "min_vol_mcap_ratio",
        "max_vol_mcap_ratio",
    )
    @classmethod
    def _non_negative_amount(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value):
            raise _invalid("must be a finite number")
        if value < 0:
            raise _invalid(f"must not be negative (got {value:g})")
        limit = MAX_RATIO if "ratio" in (info.field_name or "") else MAX_USD
        if value > limit:
            raise _invalid(f"must be at most {limit:g} (got {value:g})")
        return value

    @field_validator("min_authenticity_score", "max_authenticity_score")
    @classmethod
    def _score_range(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= 100:
            raise _invalid(f"authenticity scores run from 0 to 100 (got {value})")
        return value

    @field_validator("min_holders", "max_holders")
    @classmethod
    def _non_negative_count(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise _invalid(f"a holder count cannot be negative (got {value})")
        if value is not None and value > MAX_HOLDERS:
            raise _invalid(f"must be at most {MAX_HOLDERS} (got {value})")
        return value

    @field_validator("min_price_change_pct", "max_price_change_pct")
    @classmethod
    def _price_change_range(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value):
            raise _invalid("must be a finite number")
        if value < -100:
            raise _invalid(f"a price cannot fall by more than 100% (got {value:g})")
        if value > MAX_PRICE_CHANGE_PCT:
            raise _invalid(f"must be at most {MAX_PRICE_CHANGE_PCT:g} (got {value:g})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        pairs = [
            ("min_market_cap_usd", "max_market_cap_usd"),
            ("min_liquidity_usd", "max_liquidity_usd"),
            ("min_vol_mcap_ratio", "max_vol_mcap_ratio"),
            ("min_authenticity_score", "max_authenticity_score"),
            ("min_holders", "max_holders"),
            ("min_price_change_pct", "max_price_change_pct"),
        ]
        for low_name, high_name in pairs:
            low, high = getattr(self, low_name), getattr(self, high_name)
            if low is not None and high is not None and low > high:
                raise _invalid(
                    f"{low_name} ({low:g}) is greater than {high_name} ({high:g}); "
                    "no token can match"
                )
        has_bounds = self.min_price_change_pct is not None or self.max_price_change_pct is not None
        if has_bounds and self.price_change_window is None:
            raise _invalid(
                "min_price_change_pct/max_price_change_pct need price_change_window "
                "('1h', '24h' or '7d')"
            )
        if self.price_change_window is not None and not has_bounds:
            raise _invalid(
                "price_change_window is only used with min_price_change_pct or "
                "max_price_change_pct; to order by price change use sort_by=price_change_"
                f"{self.price_change_window}"
            )
        if self.sort_direction is not None and self.sort_by is None:
            raise _invalid("sort_direction needs sort_by (the field to order by)")
        return self

    def effective_direction(self) -> SortDirection | None:
        """The sort direction used: the one given, or the field's natural one."""
        if self.sort_by is None:
            return None
        return self.sort_direction or default_direction(self.sort_by)
