"""Turn a validated `TokenSearchQuery` into exact Typesense search parameters.

Clause order is fixed (chain, market cap, liquidity, volume/market-cap, authenticity,
holders, stablecoin, price change) so the same query always compiles to the same string.
Only fields of the `tokens` collection schema are emitted (a test checks this).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from albert.search.filters import all_of, equals, number_range
from albert.search.typesense_client import SearchParams
from albert.tools.token_search.query import SortField, TokenSearchQuery

PER_PAGE = 10
# Symbol first: an exact ticker match ("USDC") should outrank a word inside a name.
QUERY_BY = "symbol,name"
# Ties (e.g. one coin deployed on several chains) are broken by market-cap rank.
TIEBREAK = "rank:asc"


class CompiledSearch(BaseModel):
    """Exactly what is sent to Typesense for one token search."""

    model_config = ConfigDict(frozen=True)

    q: str
    query_by: str
    filter_by: str | None
    sort_by: str
    page: int
    per_page: int = PER_PAGE

    def to_params(self) -> SearchParams:
        """The client-level search parameters."""
        return SearchParams(
            q=self.q,
            query_by=self.query_by,
            filter_by=self.filter_by,
            sort_by=self.sort_by,
            page=self.page,
            per_page=self.per_page,
        )


def compile_filter(q: TokenSearchQuery) -> str | None:
    """The `filter_by` string of a query, or None when it has no filters."""
    price_clause = None
    if q.price_change_window is not None:
        price_clause = number_range(
            f"price_change_{q.price_change_window}",
            q.min_price_change_pct,
            q.max_price_change_pct,
        )
    return all_of(
        [
            equals("chain", q.chain.value) if q.chain is not None else None,
            number_range("marketcap", q.min_market_cap_usd, q.max_market_cap_usd),
            number_range("liquidity", q.min_liquidity_usd, q.max_liquidity_usd),
            number_range("vol_mcap_ratio", q.min_vol_mcap_ratio, q.max_vol_mcap_ratio),
            number_range("authenticity_score", q.min_authenticity_score, q.max_authenticity_score),
            number_range("holders", q.min_holders, q.max_holders),
            equals("stablecoin", q.stablecoin) if q.stablecoin is not None else None,
            price_clause,
        ]
    )


def compile_sort(q: TokenSearchQuery) -> str:
    """The `sort_by` string: the asked field and direction, then rank as a tie-break."""
    if q.sort_by is None:
        return f"_text_match:desc,{TIEBREAK}" if q.query else TIEBREAK
    direction = q.effective_direction()
    if q.sort_by is SortField.rank:
        return f"rank:{direction}"
    return f"{q.sort_by.value}:{direction},{TIEBREAK}"


def compile_query(q: TokenSearchQuery) -> CompiledSearch:
    """Compile a validated query into Typesense search parameters (ten results a page)."""
    return CompiledSearch(
        q=q.query or "*",
        query_by=QUERY_BY,
        filter_by=compile_filter(q),
        sort_by=compile_sort(q),
        page=q.page,
    )
