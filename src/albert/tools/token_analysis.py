"""The analyze_token tool: the platform's token analysis, summarised for the model."""

from __future__ import annotations

import math
import re
from typing import Any, Literal, Self

import httpx
from pydantic import Field, model_validator

from albert.settings import Settings
from albert.tools.addresses import AddressError, to_checksum_address
from albert.tools.base import LocalTool, ToolInput, ToolResult
from albert.tools.platform_client import (
    LiquidityData,
    MarketData,
    PlatformClient,
    PlatformError,
    SupplyData,
    TokenAnalysis,
)
from albert.tools.token_search.tool import token_deep_link

TokenChain = Literal["ethereum", "base", "arbitrum", "optimism", "polygon", "bsc", "solana"]
_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]{32,44}")

DESCRIPTION = (
    "Analyse one token: identity (name, symbol, chain, contract), market data (price, market "
    "cap, FDV, 24h volume and change, rank, all-time high/low with dates), supply, DEX "
    "liquidity when known, and a plain risk read (concentration, liquidity and volatility "
    "notes, each with the numbers behind it). Look a token up by `symbol` (e.g. PEPE), or by "
    "`chain` plus contract `address`. Chains: ethereum, base, arbitrum, optimism, polygon, "
    "bsc (EVM, 0x addresses with EIP-55 checksum) and solana (base58 mint). Market data is a "
    "snapshot: always quote its as-of date."
)


class TokenAnalysisInput(ToolInput):
    """Arguments of analyze_token: a symbol, or a chain and contract address."""

    symbol: str | None = Field(
        None,
        min_length=1,
        max_length=20,
        pattern=r"^[A-Za-z0-9.$_-]+$",
        description=(
            "Ticker symbol of the token, e.g. 'PEPE', 'UNI', 'WETH'. Case does not matter. "
            "Give either this or chain+address, not both."
        ),
    )
    chain: TokenChain | None = Field(
        None,
        description=(
            "Chain of the token contract, required with `address`: one of ethereum, base, "
            "arbitrum, optimism, polygon, bsc, solana."
        ),
    )
    address: str | None = Field(
        None,
        min_length=1,
        max_length=100,
        description=(
            "Token contract address on `chain`: 0x plus 40 hex digits on EVM chains (a "
            "mixed-case address must pass its EIP-55 checksum; all-lowercase is fine), "
            "or the base58 mint address on solana. Use only an address the user gave or a "
            "tool returned; never make one up."
        ),
    )

    @model_validator(mode="after")
    def _one_way_to_find(self) -> Self:
        if self.symbol and (self.chain or self.address):
            raise ValueError("give either symbol, or chain and address, not both")
        if not self.symbol and not (self.chain and self.address):
            raise ValueError("give a symbol, or both chain and address")
        if self.chain and self.address:
            if self.chain == "solana":
                if not _BASE58.fullmatch(self.address):
                    raise ValueError(
                        f"{self.address!r} is not a Solana mint address (base58, 32-44 chars)"
                    )
            else:
                try:
                    self.address = to_checksum_address(self.address)
                except AddressError as exc:
                    raise ValueError(str(exc)) from exc
        return self


def token_analysis_tool(settings: Settings, http: httpx.AsyncClient) -> LocalTool:
    """The analyze_token tool over the platform's token analysis service."""
    client = PlatformClient(
        settings.platform_api_url,
        http,
        timeout=settings.tool_timeout_seconds,
        api_key=settings.data_server_api_key.get_secret_value(),
    )

    async def run(args: TokenAnalysisInput) -> ToolResult:
        try:
            if args.symbol:
                found = await client.token_by_symbol(args.symbol)
                if not found.results:
                    return ToolResult.error(f"no token with symbol {found.symbol} on record")
                main, others = found.results[0], found.results[1:]
            else:
                assert args.chain and args.address  # guaranteed by the input model
                main, others = await client.token_by_address(args.chain, args.address), []
        except PlatformError as exc:
            return ToolResult.error(f"token analysis failed: {exc.message}")
        text = summarise_token(main)
        if others:
            text += "\n\nOther tokens with this symbol: " + "; ".join(
                f"{o.identity.name} ({_where(o)})" for o in others
            )
        structured: dict[str, Any] = {
            "token": main.model_dump(mode="json"),
            "page_url": _page_of(settings.deep_link_base_url, main),
        }
        if others:
            structured["other_matches"] = [o.model_dump(mode="json") for o in others]
        return ToolResult.text(text, structured=structured)

    return LocalTool("analyze_token", DESCRIPTION, TokenAnalysisInput, run)


def _page_of(base_url: str, a: TokenAnalysis) -> str | None:
    """The product's page of the token, when the product has pages and the token a place."""
    ident = a.identity
    if not (ident.chain and ident.address):
        return None
    return token_deep_link(base_url, ident.chain, ident.address)


def summarise_token(a: TokenAnalysis) -> str:
    """A short readable summary of a token analysis."""
    ident = a.identity
    lines = [f"{ident.name} ({ident.symbol}){' on ' + _where(a) if ident.address else ''}"]
    if a.market is not None:
        lines += _market_lines(a.market)
    supply = _supply_line(a.supply)
    if supply:
        lines.append(supply)
    liquidity = _liquidity_line(a.liquidity)
    if liquidity:
        lines.append(liquidity)
    lines.append(f"Risk read: {a.risk.level.upper()}")
    for note in a.risk.notes:
        lines.append(f"- [{note.severity}] {note.category}: {note.finding}")
    if a.sources:
        lines.append("Sources: " + "; ".join(a.sources))
    return "\n".join(lines)


def _market_lines(m: MarketData) -> list[str]:
    as_of = f", as of {m.as_of[:16].replace('T', ' ')} UTC" if m.as_of else ""
    parts = [f"price {usd(m.price_usd)}"]
    if m.price_change_24h_pct is not None:
        parts[0] += f" ({m.price_change_24h_pct:+.2f}% 24h)"
    if m.market_cap_usd is not None:
        rank = f", rank #{m.market_cap_rank}" if m.market_cap_rank else ""
        parts.append(f"market cap {usd(m.market_cap_usd)}{rank}")
    if m.fully_diluted_valuation_usd is not None:
        parts.append(f"FDV {usd(m.fully_diluted_valuation_usd)}")
    if m.volume_24h_usd is not None:
        parts.append(f"24h volume {usd(m.volume_24h_usd)}")
    lines = [f"Market{as_of}: " + ", ".join(parts) + "."]
    if m.low_24h_usd is not None and m.high_24h_usd is not None:
        # The band a peg or a breakout is read from: exact figures, not rounded to cents.
        lines.append(f"24h range: low {_price(m.low_24h_usd)}, high {_price(m.high_24h_usd)}.")
    extremes = []
    if m.ath_usd is not None:
        since = f", {m.ath_change_pct:+.1f}% since" if m.ath_change_pct is not None else ""
        extremes.append(f"ATH {usd(m.ath_usd)} on {_day(m.ath_date)}{since}")
    if m.atl_usd is not None:
        extremes.append(f"ATL {usd(m.atl_usd)} on {_day(m.atl_date)}")
    if extremes:
        lines.append("; ".join(extremes) + ".")
    return lines


def _price(value: float) -> str:
    # Four significant digits, cents at least: $0.99507 must not read as $1.00.
    if value <= 0:
        return f"${value:.2f}"
    decimals = max(2, 3 - math.floor(math.log10(value)))
    return f"${value:,.{decimals}f}"


def _supply_line(s: SupplyData | None) -> str | None:
    if s is None or s.circulating is None:
        return None
    cap = ""
    if s.max:
        cap = f" of {amount(s.max)} max"
    elif s.total:
        cap = f" of {amount(s.total)} total"
    share = f" ({s.circulating_share_pct:.1f}%)" if s.circulating_share_pct is not None else ""
    return f"Supply: {amount(s.circulating)} circulating{cap}{share}."


def _liquidity_line(liq: LiquidityData) -> str | None:
    if liq.pairs:
        pairs = "; ".join(
            f"{p.dex} {p.base_symbol}/{p.quote_symbol} liquidity {usd(p.liquidity_usd)}, "
            f"24h volume {usd(p.volume_24h_usd)}"
            for p in liq.pairs[:3]
        )
        return f"DEX liquidity {usd(liq.total_dex_liquidity_usd)}: {pairs}."
    if liq.note:
        return f"Liquidity: {liq.note}"
    return None


def _where(a: TokenAnalysis) -> str:
    ident = a.identity
    if ident.chain and ident.address:
        return f"{ident.chain} {ident.address}"
    return ident.chain or "chain unknown"


def _day(value: str | None) -> str:
    return value[:10] if value else "unknown date"


def usd(value: float | None) -> str:
    """Dollars for a reader: $3.36B, $617.45M, $87,270, $0.00000799."""
    if value is None:
        return "n/a"
    sign = "-" if value < 0 else ""
    v = abs(value)
    for bound, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if v >= bound:
            return f"{sign}${v / bound:.2f}{suffix}"
    if v >= 1000:
        return f"{sign}${v:,.0f}"
    if v >= 1 or v == 0:
        return f"{sign}${v:,.2f}"
    # Small prices: keep four significant digits without scientific notation.
    decimals = -math.floor(math.log10(v)) + 3
    return f"{sign}${v:.{decimals}f}".rstrip("0")


def amount(value: float | None) -> str:
    """A token amount for a reader: 420.69T, 19.97M, 1,234."""
    if value is None:
        return "n/a"
    for bound, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(value) >= bound:
            return f"{value / bound:.2f}{suffix}"
    return f"{value:,.0f}"
