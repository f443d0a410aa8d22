"""Typed async client for the platform's analysis services, and their wire models.

The models here are the contract of the services: the worker reads them and the
reference implementation in the data server builds its responses from them, so
the two cannot drift apart. The worker never imports the data server.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

Severity = Literal["info", "low", "moderate", "high", "critical"]
AddressRiskLevel = Literal["none_known", "low", "moderate", "high", "critical", "unknown"]


class WireModel(BaseModel):
    """Base of the wire models: fields added later by the service are ignored."""

    model_config = ConfigDict(extra="ignore")


# --- token analysis ---------------------------------------------------------


class ContractRef(WireModel):
    """Where a token lives on one chain."""

    chain: str
    address: str


class TokenIdentity(WireModel):
    """What the token is."""

    name: str
    symbol: str
    coingecko_id: str | None = None
    chain: str | None = None
    address: str | None = None
    contracts: list[ContractRef] = Field(default_factory=list)


class MarketData(WireModel):
    """Market snapshot in USD; any figure the source lacks is None."""

    as_of: str | None = None
    price_usd: float | None = None
    market_cap_usd: float | None = None
    fully_diluted_valuation_usd: float | None = None
    volume_24h_usd: float | None = None
    high_24h_usd: float | None = None
    low_24h_usd: float | None = None
    price_change_24h_pct: float | None = None
    market_cap_change_24h_pct: float | None = None
    market_cap_rank: int | None = None
    ath_usd: float | None = None
    ath_date: str | None = None
    ath_change_pct: float | None = None
    atl_usd: float | None = None
    atl_date: str | None = None
    atl_change_pct: float | None = None


class SupplyData(WireModel):
    """Token supply, in whole tokens."""

    circulating: float | None = None
    total: float | None = None
    max: float | None = None
    circulating_share_pct: float | None = Field(
        None, description="circulating / max (or / total when there is no max), in percent"
    )


class DexPair(WireModel):
    """One DEX trading pair of the token."""

    chain: str
    dex: str
    pair_address: str
    base_symbol: str
    quote_symbol: str
    price_usd: float | None = None
    liquidity_usd: float | None = None
    volume_24h_usd: float | None = None
    price_change_24h_pct: float | None = None
    buys_24h: int | None = None
    sells_24h: int | None = None
    fdv_usd: float | None = None
    created_at: str | None = None
    url: str | None = None


class LiquidityData(WireModel):
    """DEX liquidity known for the token."""

    pairs: list[DexPair] = Field(default_factory=list)
    total_dex_liquidity_usd: float | None = None
    note: str | None = None


class RiskNote(WireModel):
    """One finding of the risk read, with the numbers behind it."""

    category: Literal["concentration", "liquidity", "volatility"]
    severity: Severity
    finding: str
    figures: dict[str, float | str | None] = Field(default_factory=dict)


class RiskRead(WireModel):
    """A plain risk read: the worst severity among the notes, and the notes."""

    level: Literal["low", "moderate", "high", "unknown"]
    notes: list[RiskNote] = Field(default_factory=list)


class TokenAnalysis(WireModel):
    """The token analysis service's answer for one token."""

    identity: TokenIdentity
    market: MarketData | None = None
    supply: SupplyData | None = None
    liquidity: LiquidityData = Field(default_factory=LiquidityData)
    risk: RiskRead
    sources: list[str] = Field(default_factory=list)


class TokenSearchResult(WireModel):
    """All tokens on record with a symbol, largest market cap first."""

    symbol: str
    results: list[TokenAnalysis]


# --- address analysis -------------------------------------------------------


class AddressFact(WireModel):
    """A recorded fact about an address, with where it came from."""

    text: str
    source: str


class AddressRiskFlag(WireModel):
    """A reason to be careful (or not) with an address."""

    code: str
    severity: Severity
    reason: str
    source: str


class TokenHolding(WireModel):
    """A token balance recorded for an address at a point in time."""

    symbol: str
    amount: float
    as_of: str
    source: str


class AddressProfile(WireModel):
    """What is on record about one address: labels, activity, holdings, facts, flags."""

    address: str
    labels: list[str] = Field(default_factory=list)
    entity: str | None = None
    category: str | None = None
    is_contract: bool | None = None
    first_seen: str | None = None
    last_seen: str | None = None
    activity_counts: dict[str, int] | None = None
    tokens_held: list[TokenHolding] | None = None
    facts: list[AddressFact] = Field(default_factory=list)
    risk_flags: list[AddressRiskFlag] = Field(default_factory=list)


class AddressAnalysis(AddressProfile):
    """The address analysis service's answer for one wallet or contract: the profile, read."""

    known: bool
    scope: str = Field(description="which chains the record covers")
    summary: str
    token: TokenIdentity | None = None
    risk_level: AddressRiskLevel
    not_on_record: list[str] = Field(default_factory=list)


# --- feed search ------------------------------------------------------------


class FeedItem(WireModel):
    """A news item or post."""

    id: str
    title: str
    body: str | None = None
    url: str | None = None
    source: str
    source_domain: str | None = None
    kind: str = "news"
    published_at: str
    tokens: list[str] = Field(default_factory=list)
    provenance: Literal["recorded", "curated"]


class FeedHit(WireModel):
    """A feed item with its relevance score."""

    item: FeedItem
    score: float


class FeedSearchResult(WireModel):
    """Feed items matching a query, most relevant first."""

    query: str
    token: str | None = None
    total_matches: int
    hits: list[FeedHit]


# --- client -----------------------------------------------------------------


class PlatformError(Exception):
    """A platform service call that failed; the message is short and readable."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


ModelT = TypeVar("ModelT", bound=BaseModel)


class PlatformClient:
    """Calls the token analysis, address analysis and feed search services."""

    def __init__(
        self, base_url: str, http: httpx.AsyncClient, *, timeout: float, api_key: str = ""
    ) -> None:
        self._base = base_url.rstrip("/")
        self._http = http
        self._timeout = timeout
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else None

    async def token_by_symbol(self, symbol: str) -> TokenSearchResult:
        """Analyses of every token on record with this symbol."""
        return await self._get("/tokens/search", TokenSearchResult, params={"symbol": symbol})

    async def token_by_address(self, chain: str, address: str) -> TokenAnalysis:
        """Analysis of the token at address on chain."""
        path = f"/tokens/{quote(chain, safe='')}/{quote(address, safe='')}"
        return await self._get(path, TokenAnalysis)

    async def address(self, address: str) -> AddressAnalysis:
        """Risk and activity read on a wallet or contract address."""
        return await self._get(f"/addresses/{quote(address, safe='')}", AddressAnalysis)

    async def search_feed(
        self, query: str, *, token: str | None = None, limit: int = 10
    ) -> FeedSearchResult:
        """Feed items relevant to query, optionally only those mentioning token."""
        params: dict[str, Any] = {"q": query, "limit": limit}
        if token:
            params["token"] = token
        return await self._get("/feed/search", FeedSearchResult, params=params)

    async def _get(
        self, path: str, model: type[ModelT], *, params: dict[str, Any] | None = None
    ) -> ModelT:
        url = self._base + path
        try:
            # httpx times each phase separately; the outer bound caps the whole call,
            # so a server that trickles bytes cannot hold the tool past its budget.
            async with asyncio.timeout(self._timeout):
                response = await self._http.get(
                    url, params=params, headers=self._headers, timeout=self._timeout
                )
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise PlatformError(f"platform service timed out after {self._timeout:g}s") from exc
        except httpx.HTTPError as exc:
            raise PlatformError(f"platform service unreachable ({type(exc).__name__})") from exc
        if response.status_code >= 400:
            raise PlatformError(_error_text(response), status=response.status_code)
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise PlatformError(
                f"platform service sent an unexpected response ({exc.error_count()} errors)"
            ) from exc


def _error_text(response: httpx.Response) -> str:
    """The service's {"error": ...} message when there is one, else the status line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"][:300]
    return f"platform service returned HTTP {response.status_code}"
