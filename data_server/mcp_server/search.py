"""search_vaults and top_yields: flattened filters compiled to a Typesense filter_by.

The schema is the prompt: every parameter says, for the model, what it filters and in
which unit. Values are validated here (ranges, known chains, min ≤ max) before anything
reaches the index, so a bad call comes back as a tool error that names the parameter.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from albert.search import filters as fx
from data_server.mcp_server.chains import echo, normalize_chain
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import (
    StrictInput,
    ToolFailure,
    ToolOutput,
    validation_message,
)
from data_server.mcp_server.vault_index import SearchPage, VaultHit
from data_server.vaults.model import OUTLIER_APY, is_outlier

RiskLevel = Literal["low", "medium", "high", "very_high"]
RISK_ORDER: tuple[RiskLevel, ...] = ("low", "medium", "high", "very_high")
SortField = Literal["apy", "apy_base", "tvl_usd", "security_score", "reward_share", "updated_at"]

_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_SYMBOL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+\-/$]{0,31}$")

Percent = Annotated[float, Field(ge=0, le=100_000)]
Usd = Annotated[float, Field(ge=0)]


def _slug(value: str, what: str) -> str:
    slug = value.strip().lower()
    if not _SLUG.match(slug):
        raise ValueError(f"{echo(value)} is not a {what} slug (lowercase letters, digits, - . _)")
    return slug


def _symbol(value: str) -> str:
    symbol = value.strip()
    if not _SYMBOL.match(symbol):
        raise ValueError(f"{echo(value)} is not a token symbol")
    return symbol.upper()


class VaultFilters(StrictInput):
    """Filters shared by search_vaults and top_yields."""

    chain: str | None = Field(
        None,
        description="Only vaults on this chain, as a lowercase slug: 'ethereum', 'arbitrum', "
        "'base', 'optimism', 'polygon', 'bsc', 'avalanche', … Aliases like 'eth' or 'arb' work.",
    )
    chains: list[str] | None = Field(
        None,
        max_length=20,
        description="Only vaults on any of these chains (same slugs as `chain`). Combined with "
        "`chain` when both are given.",
    )
    exclude_chains: list[str] | None = Field(
        None, max_length=20, description="Leave out vaults on these chains."
    )
    protocol: str | None = Field(
        None,
        description="Only this protocol, as its lowercase slug with version, e.g. 'aave-v3', "
        "'curve-dex', 'beefy', 'yearn-finance', 'morpho-blue'. Use search_protocols to find slugs.",
    )
    protocols: list[str] | None = Field(
        None, max_length=20, description="Only vaults of any of these protocol slugs."
    )
    exclude_protocols: list[str] | None = Field(
        None, max_length=20, description="Leave out these protocol slugs."
    )
    asset_symbol: str | None = Field(
        None,
        description="Only vaults holding this token symbol (e.g. 'USDC', 'WETH'); also matches "
        "vaults whose name contains the symbol. Case-insensitive.",
    )
    asset_symbols: list[str] | None = Field(
        None, max_length=20, description="Only vaults holding any of these token symbols."
    )
    stablecoin_only: bool = Field(
        False, description="True: only vaults whose assets are all stablecoins (no price risk)."
    )
    min_apy: Percent | None = Field(
        None, description="Minimum total APY in PERCENT (5 means 5 %, not 0.05)."
    )
    max_apy: Percent | None = Field(
        None,
        description="Maximum total APY in PERCENT. Useful to drop implausible outliers (e.g. 200).",
    )
    min_base_apy: Percent | None = Field(
        None,
        description="Minimum base APY in PERCENT: yield from fees or interest, excluding "
        "token rewards.",
    )
    max_reward_share: Annotated[float, Field(ge=0, le=100)] | None = Field(
        None,
        description="Maximum share of the APY paid as reward tokens, in percent of the total "
        "APY (0–100). 20 keeps vaults whose yield is at least 80 % organic. Vaults whose "
        "reward share is unknown are left out.",
    )
    min_tvl_usd: Usd | None = Field(
        None,
        description="Minimum total value locked in USD (e.g. 1000000 for $1M). Small vaults "
        "are easier to manipulate.",
    )
    max_tvl_usd: Usd | None = Field(None, description="Maximum total value locked in USD.")
    min_security_score: Annotated[float, Field(ge=0, le=100)] | None = Field(
        None,
        description="Minimum security score, 0 (worst) to 100 (best); built from audits, "
        "protocol age, TVL, exploits, chain and impermanent-loss exposure.",
    )
    risk_ratings: list[RiskLevel] | None = Field(
        None, description="Only vaults with one of these risk ratings."
    )
    max_risk_rating: RiskLevel | None = Field(
        None,
        description="Highest acceptable risk rating: 'low' < 'medium' < 'high' < 'very_high'. "
        "Unrated vaults are left out when this is set.",
    )
    il_risk: bool | None = Field(
        None,
        description="False: only vaults with no impermanent-loss exposure. True: only those "
        "with it. Omit for both.",
    )
    exposure: Literal["single", "multi"] | None = Field(
        None,
        description="'single': one underlying asset (lending, single-asset staking). "
        "'multi': several assets (LP positions).",
    )
    audited: bool | None = Field(
        None, description="True: only protocols with at least one known audit. False: none."
    )
    min_audits: Annotated[int, Field(ge=0, le=100)] | None = Field(
        None, description="Minimum number of known audits of the protocol."
    )
    min_protocol_age_days: Annotated[int, Field(ge=0, le=20_000)] | None = Field(
        None, description="Minimum days since the protocol launched (365 = at least a year old)."
    )
    include_inactive: bool = Field(
        False,
        description="True: also return paused and retired (eol) vaults, which take no new "
        "deposits. Default: active only.",
    )

    @field_validator("chain", mode="before")
    @classmethod
    def _chain(cls, value: object) -> object:
        return normalize_chain(value) if isinstance(value, str) else value

    @field_validator("chains", "exclude_chains", mode="before")
    @classmethod
    def _chain_list(cls, value: object) -> object:
        if isinstance(value, list):
            return [normalize_chain(v) if isinstance(v, str) else v for v in value]
        return value

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, value: str | None) -> str | None:
        return None if value is None else _slug(value, "protocol")

    @field_validator("protocols", "exclude_protocols")
    @classmethod
    def _protocol_list(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_slug(v, "protocol") for v in value]

    @field_validator("asset_symbol")
    @classmethod
    def _asset(cls, value: str | None) -> str | None:
        return None if value is None else _symbol(value)

    @field_validator("asset_symbols")
    @classmethod
    def _asset_list(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_symbol(v) for v in value]

    @model_validator(mode="after")
    def _ranges(self) -> VaultFilters:
        for low, high in (("min_apy", "max_apy"), ("min_tvl_usd", "max_tvl_usd")):
            lo, hi = getattr(self, low), getattr(self, high)
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"{low} ({lo:g}) is greater than {high} ({hi:g})")
        if self.min_base_apy is not None and self.max_apy is not None:
            if self.min_base_apy > self.max_apy:
                raise ValueError(
                    f"min_base_apy ({self.min_base_apy:g}) is greater than max_apy "
                    f"({self.max_apy:g})"
                )
        if self.audited is False and self.min_audits:
            raise ValueError("audited=false contradicts min_audits > 0")
        included = set(self.all_chains())
        if included and self.exclude_chains and included <= set(self.exclude_chains):
            raise ValueError("every requested chain is also excluded")
        return self

    def all_chains(self) -> list[str]:
        """`chain` and `chains` together, without duplicates."""
        out = [self.chain] if self.chain else []
        out += [c for c in self.chains or [] if c not in out]
        return out

    def chains_to_check(self) -> list[str]:
        """Every chain slug mentioned, for the known-chain check."""
        return self.all_chains() + list(self.exclude_chains or [])


def compile_filters(f: VaultFilters) -> str:
    """The Typesense filter_by of a validated filter set ('' when nothing is filtered)."""
    clauses: list[str | None] = []
    chains = f.all_chains()
    if chains:
        clauses.append(fx.one_of("chain", chains))
    if f.exclude_chains:
        clauses.append(fx.none_of("chain", f.exclude_chains))
    protocols = ([f.protocol] if f.protocol else []) + list(f.protocols or [])
    if protocols:
        clauses.append(fx.one_of("protocol", list(dict.fromkeys(protocols))))
    if f.exclude_protocols:
        clauses.append(fx.none_of("protocol", f.exclude_protocols))
    if f.asset_symbol:
        # Sources that give no asset list still name the vault after its assets.
        clauses.append(
            fx.any_of(
                [fx.one_of("asset_symbols", [f.asset_symbol]), fx.contains("name", f.asset_symbol)]
            )
        )
    if f.asset_symbols:
        clauses.append(fx.one_of("asset_symbols", f.asset_symbols))
    if f.stablecoin_only:
        clauses.append(fx.equals("stablecoin", True))
    if f.min_apy is not None:
        clauses.append(fx.compare("apy", ">=", f.min_apy))
    if f.max_apy is not None:
        clauses.append(fx.compare("apy", "<=", f.max_apy))
    if f.min_base_apy is not None:
        clauses.append(fx.compare("apy_base", ">=", f.min_base_apy))
    if f.max_reward_share is not None:
        clauses.append(fx.compare("reward_share", "<=", f.max_reward_share))
    if f.min_tvl_usd is not None:
        clauses.append(fx.compare("tvl_usd", ">=", f.min_tvl_usd))
    if f.max_tvl_usd is not None:
        clauses.append(fx.compare("tvl_usd", "<=", f.max_tvl_usd))
    if f.min_security_score is not None:
        clauses.append(fx.compare("security_score", ">=", f.min_security_score))
    ratings = set(f.risk_ratings or RISK_ORDER)
    if f.max_risk_rating is not None:
        ratings &= set(RISK_ORDER[: RISK_ORDER.index(f.max_risk_rating) + 1])
    if f.risk_ratings is not None or f.max_risk_rating is not None:
        if not ratings:
            raise ToolFailure("risk_ratings and max_risk_rating leave no rating to match")
        clauses.append(fx.one_of("risk_rating", [r for r in RISK_ORDER if r in ratings]))
    if f.il_risk is not None:
        clauses.append(fx.equals("il_risk", f.il_risk))
    if f.exposure is not None:
        clauses.append(fx.equals("exposure", f.exposure))
    if f.audited is True:
        clauses.append(fx.compare("audits", ">", 0))
    elif f.audited is False:
        clauses.append(fx.compare("audits", "=", 0))
    if f.min_audits:
        clauses.append(fx.compare("audits", ">=", f.min_audits))
    if f.min_protocol_age_days is not None:
        clauses.append(fx.compare("protocol_age_days", ">=", f.min_protocol_age_days))
    if not f.include_inactive:
        clauses.append(fx.equals("status", "active"))
    return fx.all_of(clauses) or ""


class SearchVaultsInput(VaultFilters):
    """Arguments of search_vaults."""

    query: str | None = Field(
        None,
        max_length=200,
        description="Optional free text matched against vault name, protocol and asset "
        "symbols (e.g. 'steth', 'usdc lending'). Leave empty to rely on filters only.",
    )
    sort_by: SortField | None = Field(
        None,
        description="Field to sort by: 'apy', 'apy_base', 'tvl_usd', 'security_score', "
        "'reward_share', 'updated_at'. Default: text relevance with a query, else tvl_usd. "
        "Vaults missing the sort field come last.",
    )
    sort_direction: Literal["asc", "desc"] = Field(
        "desc", description="'desc' (largest first, the default) or 'asc'."
    )
    page: int = Field(1, ge=1, le=100, description="1-based page number.")
    per_page: int = Field(10, ge=1, le=50, description="Results per page, 1–50 (default 10).")
    include_outliers: bool = Field(
        False,
        description="True: a search ranked by highest APY keeps vaults whose APY is above "
        "1,000 % or whose TVL is unknown (left out by default: likely broken data).",
    )

    def without_outliers(self) -> bool:
        """Ranked by highest APY, with no APY bound of the caller's: outliers are left out."""
        return (
            self.sort_by == "apy"
            and self.sort_direction == "desc"
            and self.max_apy is None
            and not self.include_outliers
        )


OUTLIERS_LEFT_OUT = (
    "Left out as likely outliers: vaults above 1,000% APY, flagged as outliers by their "
    "source, or with unknown TVL (include_outliers=true shows them, labelled)."
)


ONLY_OUTLIERS_MATCH = (
    "Only vaults usually left out of APY rankings match (flagged as likely outliers by their "
    "source, or with TVL unknown), so they are shown; none above 1,000% APY."
)


class VaultSearchResult(BaseModel):
    """One page of matching vaults."""

    found: int = Field(description="Number of vaults matching the filters")
    page: int
    per_page: int
    total_pages: int
    filter_by: str = Field(description="The index filter the parameters compiled to")
    sort_by: str
    vaults: list[VaultHit]
    outliers_left_out: bool = Field(
        False,
        description="A ranking by highest APY left out likely broken data: APYs above "
        "1,000 %, vaults their source flags as outliers, and vaults with unknown TVL",
    )
    only_outliers: bool = Field(
        False,
        description="Only vaults usually left out of APY rankings matched, so they are shown "
        "(none above 1,000 % APY)",
    )


def fmt_pct(value: float | None) -> str:
    """A percent for reading, or n/a."""
    return "n/a" if value is None else f"{value:.2f}%"


def fmt_usd(value: float | None) -> str:
    """A compact dollar amount ($1.25M), or n/a."""
    if value is None:
        return "n/a"
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= limit:
            return f"${value / limit:.2f}{suffix}"
    return f"${value:,.0f}"


def vault_line(v: VaultHit) -> str:
    """One readable line describing a vault."""
    assets = "/".join(v.asset_symbols) or "?"
    score = "n/a" if v.security_score is None else f"{v.security_score:.0f}/100"
    outlier = "; likely outlier" if v.outlier or is_outlier(v.apy, v.source_flags) else ""
    return (
        f"- {v.name} [{v.protocol} on {v.chain}] assets {assets}; APY {fmt_pct(v.apy)} "
        f"(base {fmt_pct(v.apy_base)}, rewards {fmt_pct(v.apy_reward)}); "
        f"TVL {fmt_usd(v.tvl_usd)}; security {score}; risk {v.risk_rating or 'unrated'}"
        f"{outlier}; id {v.id}" + (f"; page {v.url}" if v.url else "")
    )


def sort_expression(sort_by: str | None, direction: str, has_query: bool) -> str:
    """Typesense sort_by with a stable tie-breaker."""
    if sort_by is None:
        return "_text_match:desc,tvl_usd:desc" if has_query else "tvl_usd:desc"
    tie = "tvl_usd:desc" if sort_by != "tvl_usd" else "apy:desc"
    return f"{sort_by}:{direction},{tie}"


async def search_vaults(deps: ToolDeps, params: SearchVaultsInput) -> ToolOutput[VaultSearchResult]:
    """Run the compiled search and render one page."""
    try:
        await deps.chains.check(params.chains_to_check())
    except ValueError as exc:
        raise ToolFailure(str(exc)) from exc
    trimmed = params.without_outliers()
    asked = params
    if trimmed:
        # Likely broken data would lead every "highest APY" answer: left out, and said so.
        params = params.model_copy(
            update={"max_apy": OUTLIER_APY, "min_tvl_usd": params.min_tvl_usd or 0.0}
        )
    filter_by = compile_filters(params)
    if trimmed:
        filter_by = fx.all_of([filter_by or None, fx.equals("outlier", False)]) or ""
    sort_by = sort_expression(params.sort_by, params.sort_direction, bool(params.query))

    async def one_page(filter_by: str) -> SearchPage:
        page, _ = await deps.index.search(
            q=params.query,
            filter_by=filter_by,
            sort_by=sort_by,
            page=params.page,
            per_page=params.per_page,
        )
        return page

    page = await one_page(filter_by)
    only_outliers = False
    if trimmed and not page.found:
        # Only left-out vaults match (flagged, or TVL unknown): shown rather than nothing,
        # still none above 1,000 % APY.
        filter_by = compile_filters(asked.model_copy(update={"max_apy": OUTLIER_APY}))
        page = await one_page(filter_by)
        only_outliers = bool(page.found)
    total_pages = -(-page.found // params.per_page) if page.found else 0
    data = VaultSearchResult(
        found=page.found,
        page=params.page,
        per_page=params.per_page,
        total_pages=total_pages,
        filter_by=filter_by,
        sort_by=sort_by,
        vaults=page.hits,
        outliers_left_out=trimmed and not only_outliers,
        only_outliers=only_outliers,
    )
    if page.hits:
        head = (
            f"{page.found} vaults match; page {params.page} of {total_pages}, "
            f"sorted by {sort_by.split(',')[0]}."
        )
        lines = [head, *(vault_line(v) for v in page.hits)]
        if only_outliers:
            lines.append(ONLY_OUTLIERS_MATCH)
        elif trimmed:
            lines.append(OUTLIERS_LEFT_OUT)
        text = "\n".join(lines)
    elif page.found:
        text = f"{page.found} vaults match, but page {params.page} is past the last page."
    else:
        text = (
            "No vault matches these filters. Loosen one (lower min_tvl_usd or min_apy, drop "
            "the chain or protocol) and search again."
        )
        if trimmed:
            text += "\n" + OUTLIERS_LEFT_OUT
    return ToolOutput(data=data, text=text, coach=[v.coach_item() for v in page.hits])


class TopYieldsInput(StrictInput):
    """Arguments of top_yields: the highest APYs among vaults that pass sane minimums."""

    chain: str | None = Field(
        None, description="Only this chain (lowercase slug, e.g. 'ethereum', 'base')."
    )
    asset_symbol: str | None = Field(
        None, description="Only vaults holding this token symbol, e.g. 'USDC'."
    )
    stablecoin_only: bool = Field(False, description="True: only stablecoin vaults.")
    min_tvl_usd: Usd = Field(
        1_000_000,
        description="Minimum TVL in USD (default $1M: tiny vaults show noisy, unsustainable APYs).",
    )
    min_security_score: Annotated[float, Field(ge=0, le=100)] | None = Field(
        None, description="Minimum security score, 0–100."
    )
    max_apy: Percent | None = Field(
        None,
        description="Upper APY bound in PERCENT. Without one, likely outliers are left out "
        "(above 1,000 %, flagged by their source, or TVL unknown).",
    )
    include_outliers: bool = Field(
        False, description="True: keep likely outliers in the ranking, labelled."
    )
    limit: int = Field(10, ge=1, le=50, description="How many vaults to return (1–50).")


async def top_yields(deps: ToolDeps, params: TopYieldsInput) -> ToolOutput[VaultSearchResult]:
    """The best APYs under the given minimums, as a search sorted by APY."""
    try:
        search = SearchVaultsInput(
            chain=params.chain,
            asset_symbol=params.asset_symbol,
            stablecoin_only=params.stablecoin_only,
            min_tvl_usd=params.min_tvl_usd,
            min_security_score=params.min_security_score,
            max_apy=params.max_apy,
            include_outliers=params.include_outliers,
            min_apy=0,
            sort_by="apy",
            per_page=params.limit,
        )
    except ValidationError as exc:
        raise ToolFailure(validation_message(exc)) from exc
    return await search_vaults(deps, search)
