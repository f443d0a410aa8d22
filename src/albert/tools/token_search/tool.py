"""The `search_tokens` tool: validated query -> compiled Typesense search -> ten readable hits."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import httpx

from albert.search.typesense_client import (
    SearchHit,
    TypesenseClient,
    TypesenseConnectionError,
    TypesenseError,
)
from albert.settings import Settings
from albert.tools.base import LocalTool, ToolResult
from albert.tools.token_search.compiler import CompiledSearch, compile_query
from albert.tools.token_search.query import TokenSearchQuery

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


def token_deep_link(base_url: str, chain: str, address: str) -> str:
    """The app page of a token: `{base}/token/{chain}/{address}`."""
    return f"{base_url.rstrip('/')}/token/{quote(chain, safe='')}/{quote(address, safe='')}"


def _usd(value: float) -> str:
    for limit, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= limit:
            return f"${value / limit:.2f}{suffix}"
    if abs(value) >= 1 or value == 0:
        return f"${value:,.2f}"
    # Sub-dollar prices: four significant digits, never in exponent notation.
    return "$" + format(Decimal(f"{value:.4g}"), "f")


def _hit_line(index: int, doc: dict[str, Any], link: str) -> str:
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
    return f"{index}. {title}: " + " · ".join(parts) + f"\n   {link}"


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


def render_results(
    q: TokenSearchQuery, compiled: CompiledSearch, found: int, hits: list[dict[str, Any]]
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
            response = await client.search(collection, compiled.to_params())
        except TypesenseConnectionError as exc:
            return ToolResult.error(f"token index unreachable ({exc.message}); try again later")
        except TypesenseError as exc:
            return ToolResult.error(f"token search failed (HTTP {exc.status}: {exc.message})")
        hits = [_structured_hit(h, base_url) for h in response.hits]
        text = render_results(q, compiled, response.found, hits)
        structured = {
            "query": q.model_dump(mode="json", exclude_none=True),
            "search": compiled.model_dump(),
            "page": response.page,
            "per_page": compiled.per_page,
            "found": response.found,
            "total_pages": math.ceil(response.found / compiled.per_page),
            "next_page": q.page + 1 if q.page * compiled.per_page < response.found else None,
            "hits": hits,
        }
        return ToolResult.text(text, structured=structured)

    return LocalTool(TOOL_NAME, DESCRIPTION, TokenSearchQuery, run)
