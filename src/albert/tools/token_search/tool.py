"""The `search_tokens` tool: validated query -> compiled Typesense search -> ten readable hits.

The index holds each token's newest recorded market row, and rows come from recordings of
different days. A ranking (a search with `sort_by`) is therefore read from one snapshot: the
newest day among the matching tokens that have the ranked figure; tokens with data of other
days, or without the figure, are left out, and the answer says so with the date. A ranking
by a figure no matching token has is refused in words, never replaced by another order.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field

from albert.search.filters import all_of, number_range
from albert.search.typesense_client import (
    SearchHit,
    SearchParams,
    SearchResponse,
    TypesenseClient,
    TypesenseConnectionError,
    TypesenseError,
)
from albert.settings import Settings
from albert.tools.base import LocalTool, ToolResult
from albert.tools.token_search.compiler import CompiledSearch, compile_query
from albert.tools.token_search.query import SortField, TokenSearchQuery

TOOL_NAME = "search_tokens"
TOKENS_COLLECTION = "tokens"
# Must equal data_server.tokens.schema.UNRANKED (checked by a test; the worker does not
# ship the data server package).
UNRANKED = 1_000_000_000
# A token search is one small request; do not let a stuck index eat the whole tool budget.
MAX_SEARCH_SECONDS = 10.0

DESCRIPTION = (
    "Search the token index by name or symbol and filter by chain, market cap, liquidity, "
    "24h volume / market cap, authenticity score (0-100), holders, stablecoin status and "
    "price change over 1h/24h/7d; sort by any of these. Returns ten tokens per page with "
    "a link to each token's page; ask for the next page with page=N."
)

DAY = 86_400
# Far below any figure the index holds: `field:>=` this matches exactly the tokens that
# have the field (a range never matches an absent field). Every token has these two (the
# index refuses a bound this low for their int32 fields).
_ANY_VALUE = -(10**15)
_ALWAYS_PRESENT = frozenset({SortField.rank, SortField.authenticity_score})
# The ranked figures in words, for the answer and the refusal.
FIGURE_WORDS = {
    SortField.rank: "market-cap rank",
    SortField.marketcap: "market cap",
    SortField.liquidity: "DEX liquidity",
    SortField.volume_24h: "24-hour volume",
    SortField.vol_mcap_ratio: "volume-to-market-cap ratio",
    SortField.authenticity_score: "authenticity score",
    SortField.holders: "holder count",
    SortField.price_change_1h: "1-hour price change",
    SortField.price_change_24h: "24-hour price change",
    SortField.price_change_7d: "7-day price change",
}

# Fields copied into each structured hit, in display order.
HIT_FIELDS = (
    "symbol",
    "name",
    "chain",
    "address",
    "rank",
    "price_usd",
    "marketcap",
    "liquidity",
    "volume_24h",
    "vol_mcap_ratio",
    "authenticity_score",
    "holders",
    "stablecoin",
    "price_change_1h",
    "price_change_24h",
    "price_change_7d",
    "as_of",
)


def token_deep_link(base_url: str, chain: str, address: str) -> str | None:
    """The app page of a token: `{base}/token/{chain}/{address}`; None without a base URL
    (no link is made up)."""
    if not base_url.strip():
        return None
    return f"{base_url.rstrip('/')}/token/{quote(chain, safe='')}/{quote(address, safe='')}"


def _day(as_of: int) -> str:
    return datetime.fromtimestamp(as_of, UTC).strftime("%Y-%m-%d")


def _usd(value: float) -> str:
    for limit, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= limit:
            return f"${value / limit:.2f}{suffix}"
    if abs(value) >= 1 or value == 0:
        return f"${value:,.2f}"
    # Sub-dollar prices: four significant digits, never in exponent notation.
    return "$" + format(Decimal(f"{value:.4g}"), "f")


def _hit_line(index: int, doc: dict[str, Any], link: str | None) -> str:
    """One numbered line per token; figures the index does not have are left out."""
    rank = doc.get("rank")
    parts = [str(doc.get("chain", "?"))]
    if doc.get("stablecoin"):
        parts.append("stablecoin")
    parts.append("unranked" if rank is None or rank >= UNRANKED else f"rank #{rank}")
    money = [
        ("price", "price_usd"),
        ("mcap", "marketcap"),
        ("liquidity", "liquidity"),
        ("vol 24h", "volume_24h"),
    ]
    parts += [f"{label} {_usd(doc[key])}" for label, key in money if doc.get(key) is not None]
    if doc.get("vol_mcap_ratio") is not None:
        parts.append(f"vol/mcap {doc['vol_mcap_ratio']:.3f}")
    if doc.get("authenticity_score") is not None:
        parts.append(f"authenticity {doc['authenticity_score']}/100")
    if doc.get("holders") is not None:
        parts.append(f"holders {doc['holders']:,}")
    for window in ("1h", "24h", "7d"):
        change = doc.get(f"price_change_{window}")
        if change is not None:
            parts.append(f"{window} {change:+.2f}%")
    if doc.get("as_of"):
        parts.append(f"data of {datetime.fromtimestamp(doc['as_of'], UTC):%Y-%m-%d}")
    title = f"{doc.get('name', '?')} ({doc.get('symbol', '?')})"
    line = f"{index}. {title}: " + " · ".join(parts)
    return line + f"\n   {link}" if link else line


def _structured_hit(hit: SearchHit, base_url: str) -> dict[str, Any]:
    doc = hit.document
    out: dict[str, Any] = {k: doc.get(k) for k in HIT_FIELDS}
    if out["rank"] is not None and out["rank"] >= UNRANKED:
        out["rank"] = None
    out["deep_link"] = token_deep_link(base_url, str(doc["chain"]), str(doc["address"]))
    return out


def _describe_sort(sort_by: str) -> str:
    """`_text_match:desc,rank:asc` -> `relevance, then rank ascending`."""
    parts = []
    for clause in sort_by.split(","):
        field, _, direction = clause.partition(":")
        if field == "_text_match":
            parts.append("relevance")
        else:
            parts.append(f"{field} {'ascending' if direction == 'asc' else 'descending'}")
    return ", then ".join(parts)


class Snapshot(BaseModel):
    """The one day a ranking was read from, and what it left out."""

    model_config = ConfigDict(frozen=True)

    date: str = Field(description="UTC day of the market data ranked (YYYY-MM-DD)")
    figure: str = Field(description="The ranked figure, in words")
    left_out: int = Field(
        description="Matching tokens with the figure but data of another day, left out"
    )


class RankingRefused(Exception):
    """A ranking by a figure that no matching token has: said, not replaced."""


def render_results(
    q: TokenSearchQuery,
    compiled: CompiledSearch,
    found: int,
    hits: list[dict[str, Any]],
    snapshot: Snapshot | None = None,
) -> str:
    """The text the model reads: page header, numbered hits, and how to get more."""
    total_pages = max(1, math.ceil(found / compiled.per_page))
    if found == 0:
        return (
            "No tokens match this search. Loosen a filter (or drop the query text) and try "
            f"again. Filter used: {compiled.filter_by or 'none'}."
        )
    if not hits:
        return (
            f"Page {q.page} is past the end: {found} tokens match, {total_pages} page(s) of "
            f"{compiled.per_page}. Ask for page 1 to {total_pages}."
        )
    first = (q.page - 1) * compiled.per_page + 1
    lines = [
        f"Tokens {first}-{first + len(hits) - 1} of {found} found "
        f"(page {q.page} of {total_pages}, sorted by {_describe_sort(compiled.sort_by)}):"
    ]
    if snapshot is not None:
        lines.insert(0, _snapshot_line(snapshot))
    start = first
    for offset, hit in enumerate(hits):
        lines.append(_hit_line(start + offset, hit, hit["deep_link"]))
    if q.page < total_pages:
        lines.append(
            f"More results: call {TOOL_NAME} again with the same arguments and page={q.page + 1}."
        )
    else:
        lines.append("This is the last page.")
    return "\n".join(lines)


def _snapshot_line(snapshot: Snapshot) -> str:
    """How a ranking was read, for the model to say with the date."""
    line = (
        f"Data as of {snapshot.date}: ranked by {snapshot.figure} among the tokens with "
        "market data of that day only"
    )
    if snapshot.left_out:
        line += (
            f" ({snapshot.left_out} matching token(s) with data of an older day are left out, "
            f"as are those without a {snapshot.figure})"
        )
    return line + "."


async def _ranking(
    client: TypesenseClient, collection: str, q: TokenSearchQuery, compiled: CompiledSearch
) -> tuple[CompiledSearch, Snapshot | None]:
    """The search pinned to one snapshot day when it ranks (else as compiled).

    RankingRefused when matching tokens exist but none has the ranked figure."""
    if q.sort_by is None:
        return compiled, None
    field = q.sort_by.value
    has_figure = None if q.sort_by in _ALWAYS_PRESENT else number_range(field, _ANY_VALUE, None)
    with_figure = all_of([compiled.filter_by, has_figure])
    newest = await _first(client, collection, compiled, with_figure, "as_of:desc")
    if newest.found == 0:
        matching = await _first(client, collection, compiled, compiled.filter_by, "rank:asc")
        if matching.found:
            raise RankingRefused(
                f"No token matching this search has a {FIGURE_WORDS[q.sort_by]} in the index "
                f"({matching.found} match without one), so they cannot be ranked by it; "
                "they are not ranked by another figure in its place."
            )
        return compiled, None
    as_of = int(newest.hits[0].document["as_of"])
    start = as_of - as_of % DAY
    pinned = all_of([with_figure, number_range("as_of", start, start + DAY - 1)])
    ranked = compiled.model_copy(update={"filter_by": pinned})
    # `left_out` is the count with the figure; the caller subtracts the day's own count.
    return ranked, Snapshot(date=_day(as_of), figure=FIGURE_WORDS[q.sort_by], left_out=newest.found)


async def _first(
    client: TypesenseClient,
    collection: str,
    compiled: CompiledSearch,
    filter_by: str | None,
    sort_by: str,
) -> SearchResponse:
    """One document of the search under another filter and order (its count with it)."""
    params = SearchParams(
        q=compiled.q,
        query_by=compiled.query_by,
        filter_by=filter_by,
        sort_by=sort_by,
        page=1,
        per_page=1,
    )
    return await client.search(collection, params)


def _dates(hits: list[dict[str, Any]]) -> list[str]:
    """The days of market data among the hits, newest first."""
    days = {_day(int(h["as_of"])) for h in hits if isinstance(h.get("as_of"), int | float)}
    return sorted(days, reverse=True)


def _index_client(settings: Settings, http: httpx.AsyncClient) -> TypesenseClient:
    """The token index's client, bounded by the tool's own timeout."""
    timeout = httpx.Timeout(
        min(settings.tool_timeout_seconds, MAX_SEARCH_SECONDS),
        connect=min(settings.tool_timeout_seconds, 2.0),
    )
    return TypesenseClient(
        settings.typesense_url,
        settings.typesense_api_key.get_secret_value(),
        http,
        timeout=timeout,
    )


def token_search_tool(
    settings: Settings,
    http: httpx.AsyncClient,
    *,
    collection: str = TOKENS_COLLECTION,
) -> LocalTool[TokenSearchQuery]:
    """The `search_tokens` tool over the Typesense `tokens` collection (the caller owns `http`)."""
    client = _index_client(settings, http)
    base_url = settings.deep_link_base_url

    async def run(q: TokenSearchQuery) -> ToolResult:
        compiled = compile_query(q)
        try:
            compiled, snapshot = await _ranking(client, collection, q, compiled)
            response = await client.search(collection, compiled.to_params())
            if snapshot is not None:
                left_out = max(0, snapshot.left_out - response.found)
                snapshot = snapshot.model_copy(update={"left_out": left_out})
        except RankingRefused as exc:
            return ToolResult.error(str(exc))
        except TypesenseConnectionError as exc:
            return ToolResult.error(f"token index unreachable ({exc.message}); try again later")
        except TypesenseError as exc:
            return ToolResult.error(f"token search failed (HTTP {exc.status}: {exc.message})")
        hits = [_structured_hit(h, base_url) for h in response.hits]
        text = render_results(q, compiled, response.found, hits, snapshot)
        structured = {
            "query": q.model_dump(mode="json", exclude_none=True),
            "search": compiled.model_dump(),
            "page": response.page,
            "per_page": compiled.per_page,
            "found": response.found,
            "total_pages": math.ceil(response.found / compiled.per_page),
            "next_page": q.page + 1 if q.page * compiled.per_page < response.found else None,
            # A ranking's one day of data; else the days the hits' data are of.
            "snapshot": snapshot.model_dump() if snapshot is not None else None,
            "data_dates": _dates(hits),
            "hits": hits,
        }
        return ToolResult.text(text, structured=structured)

    return LocalTool(TOOL_NAME, DESCRIPTION, TokenSearchQuery, run)
