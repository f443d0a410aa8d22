"""Property: every valid query compiles to a search the real Typesense accepts, and what it
returns is exactly the seed documents the query describes."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from hypothesis import event, example, given, settings

from albert.search.filters import number
from albert.search.typesense_client import SearchParams, SearchResponse, TypesenseClient
from albert.tools.token_search.compiler import compile_query
from albert.tools.token_search.query import TokenSearchQuery
from data_server.tokens.seed import TokenDocument

from .conftest import SeededTokens
from .strategies import valid_query_args


def _f32(value: float) -> float:
    """Typesense stores `float` fields in 32 bits; compare the way it does."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _within(value: float | None, low: float | None, high: float | None, is_float: bool) -> bool:
    if low is None and high is None:
        return True
    if value is None:
        return False  # absent fields never match a range
    conv = _f32 if is_float else float
    if low is not None and conv(value) < conv(float(number(low))):
        return False
    return not (high is not None and conv(value) > conv(float(number(high))))


def matches(doc: TokenDocument, q: TokenSearchQuery) -> bool:
    """The query's filters evaluated in Python: the oracle for the index's answer."""
    if q.chain is not None and doc.chain != q.chain.value:
        return False
    if q.stablecoin is not None and doc.stablecoin != q.stablecoin:
        return False
    checks = [
        (doc.marketcap, q.min_market_cap_usd, q.max_market_cap_usd, True),
        (doc.liquidity, q.min_liquidity_usd, q.max_liquidity_usd, True),
        (doc.vol_mcap_ratio, q.min_vol_mcap_ratio, q.max_vol_mcap_ratio, True),
        (doc.authenticity_score, q.min_authenticity_score, q.max_authenticity_score, False),
        (doc.holders, q.min_holders, q.max_holders, False),
    ]
    if q.price_change_window is not None:
        value = getattr(doc, f"price_change_{q.price_change_window}")
        checks.append((value, q.min_price_change_pct, q.max_price_change_pct, True))
    return all(_within(*c) for c in checks)


async def _search(seeded: SeededTokens, params: SearchParams) -> SearchResponse:
    async with TypesenseClient(seeded.url, seeded.api_key) as client:
        return await client.search(seeded.collection, params)


@settings(max_examples=60, deadline=None)
@given(args=valid_query_args())
# Bounds exactly on seed values: equality must be inclusive on both sides.
@example(args={"min_authenticity_score": 98})
@example(args={"max_authenticity_score": 72, "sort_by": "authenticity_score"})
@example(args={"min_authenticity_score": 72, "max_authenticity_score": 72})
@example(args={"price_change_window": "24h", "max_price_change_pct": -18.54})
@example(args={"price_change_window": "1h", "min_price_change_pct": -33.53, "page": 2})
@example(args={"min_liquidity_usd": 254.49})
@example(args={"stablecoin": True, "min_market_cap_usd": 1_000_000, "sort_by": "rank"})
def test_valid_queries_are_accepted_and_exact(
    seeded_tokens: SeededTokens, args: dict[str, Any]
) -> None:
    q = TokenSearchQuery.model_validate(args)
    compiled = compile_query(q)
    # The page as the tool asks for it: Typesense must accept the compiled strings as they are.
    page = asyncio.run(_search(seeded_tokens, compiled.to_params()))
    assert len(page.hits) <= compiled.per_page
    # All results at once, to compare with the oracle.
    everything = compiled.to_params().model_copy(update={"page": 1, "per_page": 250})
    full = asyncio.run(_search(seeded_tokens, everything))
    got = {h.document["id"] for h in full.hits}
    expected = {d.id for d in seeded_tokens.documents if matches(d, q)}
    event("oracle: empty" if not expected else "oracle: some tokens match")
    assert got <= expected, f"{compiled.filter_by}: returned non-matching {got - expected}"
    if q.query is None:
        assert got == expected, f"{compiled.filter_by}: missing {expected - got}"
        assert page.found == len(expected)
        assert [h.document["id"] for h in page.hits] == [h.document["id"] for h in full.hits][
            (q.page - 1) * 10 : q.page * 10
        ]
