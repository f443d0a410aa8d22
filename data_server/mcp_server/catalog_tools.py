"""search_protocols and search_vault_assets: protocols and vault assets, from the index.

The asset tool is not called `search_tokens`: the agent has a local token search under
that name, and remote tools are merged over local ones, so the name would shadow it.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, Field, field_validator

from albert.search import filters as fx
from data_server.mcp_server.chains import normalize_chain
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import StrictInput, ToolFailure, ToolOutput
from data_server.mcp_server.search import fmt_usd
from data_server.mcp_server.vault_index import VaultHit

# Aggregates read at most this many vaults: enough for every protocol on a chain, bounded.
SCAN_LIMIT = 2000
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")


# Words that name a kind of protocol, not one protocol: "curve finance" means curve.
_GENERIC_WORDS = frozenset(
    {
        "finance",
        "protocol",
        "protocols",
        "dex",
        "amm",
        "lending",
        "exchange",
        "yield",
        "vault",
        "vaults",
        "the",
        "network",
        "labs",
        "dao",
        "v1",
        "v2",
        "v3",
        "v4",
    }
)


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def protocol_matches(query: str, slug: str) -> bool:
    """Whether a protocol slug is what the query names (not a vault that mentions it)."""
    words, parts = _name_words(query), set(re.split(r"[^a-z0-9]+", slug.lower()))
    # "uniswap v9" names no version there is: not uniswap-v3 (v2, v4) by the word "uniswap".
    asked, listed = _versions(re.split(r"[^a-z0-9]+", query.lower())), _versions(parts)
    if asked and listed and not asked & listed:
        return False
    needle, name = _letters(query), _letters(slug)
    if len(needle) >= 3 and (needle in name or (len(name) >= 3 and name in needle)):
        return True
    return any(len(w) >= 3 and any(p.startswith(w) for p in parts) for w in words)


def _versions(words: Iterable[str]) -> set[str]:
    return {w for w in words if re.fullmatch(r"v\d+", w)}


def _name_words(query: str) -> list[str]:
    """The words of a query that can name a protocol (generic words dropped)."""
    return [w for w in re.split(r"[^a-z0-9]+", query.lower()) if w and w not in _GENERIC_WORDS]


class SearchProtocolsInput(StrictInput):
    """Arguments of search_protocols."""

    query: str | None = Field(
        None,
        max_length=100,
        description="Part of a protocol name or slug, e.g. 'aave', 'curve', 'morpho'. Omit to "
        "list the largest protocols.",
    )
    chain: str | None = Field(
        None, description="Only count vaults on this chain (lowercase slug, e.g. 'base')."
    )
    min_tvl_usd: Annotated[float, Field(ge=0)] | None = Field(
        None, description="Only protocols whose indexed vaults hold at least this much USD."
    )
    limit: int = Field(10, ge=1, le=50, description="How many protocols to return (1–50).")

    @field_validator("chain", mode="before")
    @classmethod
    def _chain(cls, value: object) -> object:
        return normalize_chain(value) if isinstance(value, str) else value


class ProtocolSummary(BaseModel):
    """One protocol as seen through its indexed vaults."""

    protocol: str
    vaults: int
    chains: list[str]
    total_tvl_usd: float
    max_apy: float | None
    median_apy: float | None
    avg_security_score: float | None
    risk_ratings: dict[str, int] = Field(description="Vault count per risk rating")
    audits: int | None
    protocol_age_days: int | None


class ProtocolSearchResult(BaseModel):
    """Protocols matching the query, largest TVL first."""

    query: str | None
    protocols: list[ProtocolSummary]
    vaults_scanned: int
    named_in_vaults: dict[str, int] = Field(
        default_factory=dict,
        description="When no protocol matches: protocol → how many of its vaults have the "
        "query in their name (e.g. Beefy vaults of Pendle LP tokens); search_vaults lists them",
    )


async def search_protocols(
    deps: ToolDeps, params: SearchProtocolsInput
) -> ToolOutput[ProtocolSearchResult]:
    """Aggregate indexed vaults by protocol."""
    if params.chain:
        try:
            await deps.chains.check([params.chain])
        except ValueError as exc:
            raise ToolFailure(str(exc)) from exc
    filter_by = (
        fx.all_of(
            [
                fx.equals("chain", params.chain) if params.chain else None,
                fx.equals("status", "active"),
            ]
        )
        or ""
    )
    # "curve finance": the index would want every word in a vault's name; the protocol is "curve".
    q = (" ".join(_name_words(params.query)) or params.query) if params.query else None
    _, hits = await deps.index.scan(
        q=q, filter_by=filter_by, query_by="protocol,name", max_hits=SCAN_LIMIT
    )
    groups: dict[str, list[VaultHit]] = defaultdict(list)
    for hit in hits:
        groups[hit.protocol].append(hit)
    named: dict[str, int] = {}
    if params.query:
        # The index matches names too, with typos ("Aave USDC" on Beefy, "pendle" ~ "pancake"):
        # a protocol is listed only when its own slug is what the query names.
        query = params.query
        own = {p: v for p, v in groups.items() if protocol_matches(query, p)}
        if not own:
            needle = _letters(query)
            named = {
                p: n
                for p, v in groups.items()
                if needle and (n := sum(needle in _letters(h.name) for h in v))
            }
        groups = defaultdict(list, own)
    summaries = []
    for protocol, vaults in groups.items():
        tvl = sum(v.tvl_usd or 0.0 for v in vaults)
        if params.min_tvl_usd is not None and tvl < params.min_tvl_usd:
            continue
        apys = [v.apy for v in vaults if v.apy is not None]
        scores = [v.security_score for v in vaults if v.security_score is not None]
        audits = [v.audits for v in vaults if v.audits is not None]
        ages = [v.protocol_age_days for v in vaults if v.protocol_age_days is not None]
        summaries.append(
            ProtocolSummary(
                protocol=protocol,
                vaults=len(vaults),
                chains=sorted({v.chain for v in vaults}),
                total_tvl_usd=round(tvl, 2),
                max_apy=max(apys) if apys else None,
                median_apy=statistics.median(apys) if apys else None,
                avg_security_score=round(statistics.fmean(scores), 1) if scores else None,
                risk_ratings=dict(Counter(v.risk_rating for v in vaults if v.risk_rating)),
                audits=max(audits) if audits else None,
                protocol_age_days=max(ages) if ages else None,
            )
        )
    summaries.sort(key=lambda s: s.total_tvl_usd, reverse=True)
    summaries = summaries[: params.limit]
    data = ProtocolSearchResult(
        query=params.query, protocols=summaries, vaults_scanned=len(hits), named_in_vaults=named
    )
    if not summaries:
        text = "No protocol matches. Try a shorter name (e.g. 'aave') or drop the chain."
        if named:
            where = ", ".join(f"{n} on {p}" for p, n in sorted(named.items()))
            text += (
                f" No indexed protocol is called {params.query!r}, but vaults of other "
                f"protocols carry it in their names ({where}): search_vaults with that "
                "query lists them."
            )
    else:
        lines = [f"{len(summaries)} protocols (by indexed TVL):"]
        for s in summaries:
            med = "n/a" if s.median_apy is None else f"{s.median_apy:.2f}%"
            lines.append(
                f"- {s.protocol}: {s.vaults} vaults on {', '.join(s.chains)}; TVL "
                f"{fmt_usd(s.total_tvl_usd)}; median APY {med}; avg security "
                f"{s.avg_security_score if s.avg_security_score is not None else 'n/a'}"
            )
        text = "\n".join(lines)
    return ToolOutput(data=data, text=text)


class SearchVaultAssetsInput(StrictInput):
    """Arguments of search_vault_assets."""

    query: str = Field(
        min_length=1,
        max_length=100,
        description="Token symbol (e.g. 'USDC', 'wstETH') or token contract address (0x…) of a "
        "vault's underlying asset.",
    )
    chain: str | None = Field(None, description="Only this chain (lowercase slug).")
    stablecoin_only: bool = Field(False, description="True: only stablecoin assets.")
    limit: int = Field(10, ge=1, le=50, description="How many tokens to return (1–50).")

    @field_validator("chain", mode="before")
    @classmethod
    def _chain(cls, value: object) -> object:
        return normalize_chain(value) if isinstance(value, str) else value


class TokenSummary(BaseModel):
    """One underlying token on one chain, with the vaults that hold it."""

    symbol: str
    chain: str
    addresses: list[str] = Field(description="Contract addresses seen for this symbol")
    stablecoin: bool
    vaults: int
    total_tvl_usd: float
    max_apy: float | None
    best_vault_id: str | None = Field(description="Highest-APY vault with at least $1M TVL")


class TokenSearchResult(BaseModel):
    """Underlying tokens matching the query."""

    query: str
    tokens: list[TokenSummary]


def _pairs(v: VaultHit) -> list[tuple[str, str | None]]:
    """(symbol, address) pairs of a vault; addresses only when the lists line up."""
    if len(v.asset_symbols) == len(v.underlying_tokens):
        return list(zip(v.asset_symbols, v.underlying_tokens, strict=True))
    return [(s, None) for s in v.asset_symbols]


async def search_vault_assets(
    deps: ToolDeps, params: SearchVaultAssetsInput
) -> ToolOutput[TokenSearchResult]:
    """Find vault underlying tokens by symbol or address."""
    query = params.query.strip()
    if params.chain:
        try:
            await deps.chains.check([params.chain])
        except ValueError as exc:
            raise ToolFailure(str(exc)) from exc
    parts: list[str | None] = [fx.equals("status", "active")]
    if params.chain:
        parts.append(fx.equals("chain", params.chain))
    if params.stablecoin_only:
        parts.append(fx.equals("stablecoin", True))
    by_address = bool(_ADDRESS.match(query))
    if by_address:
        variants = list(dict.fromkeys([query, query.lower()]))
        parts.append(fx.one_of("underlying_tokens", variants))
        q = None
    elif query.startswith("0x"):
        raise ToolFailure(f"{query!r} is not a token address (0x followed by 40 hex digits)")
    else:
        q = query
    _, hits = await deps.index.scan(
        q=q,
        filter_by=fx.all_of(parts) or "",
        query_by="asset_symbols",
        max_hits=SCAN_LIMIT,
    )
    groups: dict[tuple[str, str], list[tuple[VaultHit, str | None]]] = defaultdict(list)
    needle = query.lower()
    for hit in hits:
        for symbol, address in _pairs(hit):
            if by_address:
                keep = address is not None and address.lower() == needle
            else:
                keep = needle in symbol.lower()
            if keep:
                groups[(symbol.upper(), hit.chain)].append((hit, address))
    tokens = []
    for (symbol, chain), items in groups.items():
        vaults = {h.id: h for h, _ in items}
        big = [h for h in vaults.values() if (h.tvl_usd or 0) >= 1_000_000 and h.apy is not None]
        best = max(big, key=lambda h: h.apy or 0.0) if big else None
        apys = [h.apy for h in vaults.values() if h.apy is not None]
        tokens.append(
            TokenSummary(
                symbol=symbol,
                chain=chain,
                addresses=sorted({a for _, a in items if a}),
                stablecoin=all(h.stablecoin for h in vaults.values()),
                vaults=len(vaults),
                total_tvl_usd=round(sum(h.tvl_usd or 0.0 for h in vaults.values()), 2),
                max_apy=max(apys) if apys else None,
                best_vault_id=best.id if best else None,
            )
        )
    # Exact symbol matches first, then by how much TVL sits in the token's vaults.
    tokens.sort(key=lambda t: (t.symbol.lower() != needle, -t.total_tvl_usd))
    tokens = tokens[: params.limit]
    data = TokenSearchResult(query=query, tokens=tokens)
    if not tokens:
        text = f"No vault holds a token matching {query!r}."
    else:
        lines = [f"{len(tokens)} tokens held by indexed vaults:"]
        for t in tokens:
            apy = "n/a" if t.max_apy is None else f"{t.max_apy:.2f}%"
            lines.append(
                f"- {t.symbol} on {t.chain}: {t.vaults} vaults, TVL {fmt_usd(t.total_tvl_usd)}, "
                f"best APY {apy}"
                + (f", best ≥$1M vault {t.best_vault_id}" if t.best_vault_id else "")
            )
        text = "\n".join(lines)
    return ToolOutput(data=data, text=text)
