"""The search_feed tool: relevance-ranked news and posts from the platform's feed."""

from __future__ import annotations

import httpx
from pydantic import Field

from albert.settings import Settings
from albert.tools.base import LocalTool, ToolInput, ToolResult
from albert.tools.platform_client import FeedSearchResult, PlatformClient, PlatformError

DESCRIPTION = (
    "Search the platform's news and social feed for what the market is saying about a "
    "token, protocol or event. Returns the most relevant items first (title, source, "
    "published time, URL, tokens mentioned). Use it for 'what is the market saying about "
    "Aave?' or 'any news on the Bybit hack?'. Quote sources and dates; items marked as "
    "curated samples are background explainers, not news reports."
)

BODY_PREVIEW_CHARS = 240


class FeedSearchInput(ToolInput):
    """Arguments of search_feed."""

    query: str = Field(
        min_length=1,
        max_length=200,
        description=(
            "Topic words to search for, e.g. 'aave', 'bybit hack', 'uniswap sec'. Use asset "
            "names, symbols, protocols or events; filler words are ignored."
        ),
    )
    token: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9]{1,15}$",
        description=(
            "Optional token symbol, e.g. 'AAVE': only items that mention this token are "
            "returned. Leave out for a broad search."
        ),
    )
    limit: int = Field(5, ge=1, le=20, description="How many items to return, 1 to 20. Default 5.")


def feed_search_tool(settings: Settings, http: httpx.AsyncClient) -> LocalTool:
    """The search_feed tool over the platform's feed search service."""
    client = PlatformClient(
        settings.platform_api_url,
        http,
        timeout=settings.tool_timeout_seconds,
        api_key=settings.data_server_api_key.get_secret_value(),
    )

    async def run(args: FeedSearchInput) -> ToolResult:
        try:
            result = await client.search_feed(args.query, token=args.token, limit=args.limit)
        except PlatformError as exc:
            return ToolResult.error(f"feed search failed: {exc.message}")
        return ToolResult.text(summarise_feed(result), structured=result.model_dump(mode="json"))

    return LocalTool("search_feed", DESCRIPTION, FeedSearchInput, run)


def summarise_feed(r: FeedSearchResult) -> str:
    """A short readable list of the hits."""
    scope = f'"{r.query}"' + (f" (token {r.token})" if r.token else "")
    if not r.hits:
        return f"No feed items match {scope}."
    lines = [
        f"Feed search {scope}: {r.total_matches} matching item(s), "
        f"showing {len(r.hits)}, most relevant first."
    ]
    for n, hit in enumerate(r.hits, start=1):
        item = hit.item
        when = item.published_at[:16].replace("T", " ")
        label = " [curated sample, not a news report]" if item.provenance == "curated" else ""
        lines.append(f"{n}. {item.title} - {item.source}, {when} UTC{label}")
        if item.body:
            body = (
                item.body
                if len(item.body) <= BODY_PREVIEW_CHARS
                else (item.body[:BODY_PREVIEW_CHARS].rsplit(" ", 1)[0] + " ...")
            )
            lines.append(f"   {body}")
        if item.tokens:
            lines.append(f"   tokens: {', '.join(item.tokens)}")
        if item.url:
            lines.append(f"   {item.url}")
    return "\n".join(lines)
