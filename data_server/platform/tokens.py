"""Token analysis: identity, market, supply, DEX liquidity and a risk read computed from them."""

from __future__ import annotations

from datetime import UTC, datetime

from albert.tools.platform_client import (
    ContractRef,
    DexPair,
    LiquidityData,
    MarketData,
    RiskNote,
    RiskRead,
    SupplyData,
    TokenAnalysis,
    TokenIdentity,
)
from data_server.market import MarketRow
from data_server.platform.data import PairRecord, PlatformData

# Thresholds of the risk read. They are judgement calls, kept here in one place
# so each note can quote the number it was compared with.
VOLATILITY_24H_HIGH_PCT = 15.0
VOLATILITY_24H_MODERATE_PCT = 5.0
RANGE_24H_HIGH_PCT = 20.0
RANGE_24H_MODERATE_PCT = 10.0
DRAWDOWN_HIGH_PCT = -75.0
DRAWDOWN_MODERATE_PCT = -40.0
TURNOVER_HEAVY = 0.5  # 24h volume / market cap
TURNOVER_THIN = 0.01
DEX_LIQUIDITY_HIGH_USD = 50_000.0
DEX_LIQUIDITY_MODERATE_USD = 1_000_000.0
MICRO_CAP_USD = 10_000_000.0
SMALL_CAP_USD = 100_000_000.0
OVERHANG_HIGH_RATIO = 3.0  # FDV / market cap
OVERHANG_MODERATE_RATIO = 1.5

_SEVERITY_ORDER = {"info": 0, "low": 1, "moderate": 2, "high": 3, "critical": 4}


class TokenIndex:
    """Finds tokens by symbol or by chain and address, and analyses them."""

    def __init__(self, data: PlatformData) -> None:
        self._data = data
        self._contracts: dict[str, list[ContractRef]] = {}
        self._by_contract: dict[tuple[str, str], str] = {}
        for c in data.contracts:
            self._contracts.setdefault(c.coingecko_id, []).append(
                ContractRef(chain=c.chain, address=c.address)
            )
            self._by_contract[(c.chain, _key(c.chain, c.address))] = c.coingecko_id
        self._markets = {row.id: row for row in data.markets}

    def by_symbol(self, symbol: str) -> list[TokenAnalysis]:
        """Every token with this symbol (case-insensitive), largest market cap first."""
        wanted = symbol.strip().lower()
        found = [self._analyse_market(row) for row in self._data.markets if row.symbol == wanted]
        market_addresses = {
            (ref.chain, _key(ref.chain, ref.address))
            for analysis in found
            for ref in analysis.identity.contracts
        }
        seen: set[tuple[str, str]] = set()
        for pair in self._data.pairs:
            base = pair.base_token
            key = (pair.chain_id, _key(pair.chain_id, base.address))
            if base.symbol.lower() == wanted and key not in market_addresses and key not in seen:
                seen.add(key)
                found.append(self._analyse_dex_only(pair.chain_id, base.address))
        found.sort(key=_market_cap, reverse=True)
        return found

    def by_address(self, chain: str, address: str) -> TokenAnalysis | None:
        """The token whose contract is address on chain, or None when not on record."""
        coin_id = self._by_contract.get((chain, _key(chain, address)))
        if coin_id and coin_id in self._markets:
            canonical = next(
                ref.address
                for ref in self._contracts[coin_id]
                if ref.chain == chain and _key(chain, ref.address) == _key(chain, address)
            )
            return self._analyse_market(self._markets[coin_id], chain=chain, address=canonical)
        if self._pairs_for(chain, address):
            return self._analyse_dex_only(chain, address)
        return None

    def identity_of_contract(self, chain: str, address: str) -> TokenIdentity | None:
        """The identity of a token contract, for the address service's cross-reference."""
        analysis = self.by_address(chain, address)
        return analysis.identity if analysis else None

    def _pairs_for(self, chain: str, address: str) -> list[PairRecord]:
        key = _key(chain, address)
        return [
            p
            for p in self._data.pairs
            if p.chain_id == chain and _key(chain, p.base_token.address) == key
        ]

    def _analyse_market(
        self, row: MarketRow, *, chain: str | None = None, address: str | None = None
    ) -> TokenAnalysis:
        contracts = self._contracts.get(row.id, [])
        if chain is None and len(contracts) == 1:
            chain, address = contracts[0].chain, contracts[0].address
        pairs = [p for ref in contracts for p in self._pairs_for(ref.chain, ref.address)]
        market = _market_from_row(row)
        supply = _supply_from_row(row)
        liquidity = _liquidity(pairs)
        sources = [row.source or self._data.markets_source]
        if contracts:
            sources.append("contract addresses: the product's curated deployments list")
        if pairs:
            sources.append(self._data.pairs_source)
        return TokenAnalysis(
            identity=TokenIdentity(
                name=row.name,
                symbol=row.symbol.upper(),
                coingecko_id=row.id,
                chain=chain,
                address=address,
                contracts=contracts,
            ),
            market=market,
            supply=supply,
            liquidity=liquidity,
            risk=risk_read(market, supply, liquidity),
            sources=sources,
        )

    def _analyse_dex_only(self, chain: str, address: str) -> TokenAnalysis:
        pairs = self._pairs_for(chain, address)
        base = pairs[0].base_token
        deepest = max(pairs, key=lambda p: p.liquidity.get("usd", 0.0))
        market = MarketData(
            as_of=None,
            price_usd=deepest.price_usd,
            fully_diluted_valuation_usd=deepest.fdv,
            volume_24h_usd=sum(p.volume.get("h24", 0.0) for p in pairs),
            price_change_24h_pct=deepest.price_change.get("h24"),
        )
        liquidity = _liquidity(pairs)
        return TokenAnalysis(
            identity=TokenIdentity(
                name=base.name,
                symbol=base.symbol.upper(),
                chain=chain,
                address=base.address,
                contracts=[ContractRef(chain=chain, address=base.address)],
            ),
            market=market,
            supply=None,
            liquidity=liquidity,
            risk=risk_read(market, None, liquidity),
            sources=[self._data.pairs_source],
        )


def _market_cap(analysis: TokenAnalysis) -> float:
    return (analysis.market.market_cap_usd if analysis.market else None) or 0.0


def _key(chain: str, address: str) -> str:
    # EVM addresses compare case-insensitively; Solana base58 is case-sensitive.
    return address if chain == "solana" else address.lower()


def _market_from_row(row: MarketRow) -> MarketData:
    return MarketData(
        as_of=row.last_updated,
        price_usd=row.current_price,
        market_cap_usd=row.market_cap,
        fully_diluted_valuation_usd=row.fully_diluted_valuation,
        volume_24h_usd=row.total_volume,
        high_24h_usd=row.high_24h,
        low_24h_usd=row.low_24h,
        price_change_24h_pct=row.price_change_percentage_24h,
        market_cap_change_24h_pct=row.market_cap_change_percentage_24h,
        market_cap_rank=row.market_cap_rank,
        ath_usd=row.ath,
        ath_date=row.ath_date,
        ath_change_pct=row.ath_change_percentage,
        atl_usd=row.atl,
        atl_date=row.atl_date,
        atl_change_pct=row.atl_change_percentage,
    )


def _supply_from_row(row: MarketRow) -> SupplyData:
    cap = row.max_supply or row.total_supply
    share = None
    if row.circulating_supply is not None and cap:
        share = round(100.0 * row.circulating_supply / cap, 2)
    return SupplyData(
        circulating=row.circulating_supply,
        total=row.total_supply,
        max=row.max_supply,
        circulating_share_pct=share,
    )


def _liquidity(pairs: list[PairRecord]) -> LiquidityData:
    if not pairs:
        return LiquidityData(
            note="No DEX pair on record for this token; the liquidity read uses 24h volume only."
        )
    dex_pairs = [
        DexPair(
            chain=p.chain_id,
            dex=p.dex_id,
            pair_address=p.pair_address,
            base_symbol=p.base_token.symbol,
            quote_symbol=p.quote_token.symbol,
            price_usd=p.price_usd,
            liquidity_usd=p.liquidity.get("usd"),
            volume_24h_usd=p.volume.get("h24"),
            price_change_24h_pct=p.price_change.get("h24"),
            buys_24h=p.txns.get("h24", {}).get("buys"),
            sells_24h=p.txns.get("h24", {}).get("sells"),
            fdv_usd=p.fdv,
            created_at=_ms_to_iso(p.pair_created_at),
            url=p.url,
        )
        for p in pairs
    ]
    total = sum(p.liquidity_usd or 0.0 for p in dex_pairs)
    return LiquidityData(pairs=dex_pairs, total_dex_liquidity_usd=round(total, 2))


def _ms_to_iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def risk_read(
    market: MarketData | None, supply: SupplyData | None, liquidity: LiquidityData
) -> RiskRead:
    """Concentration, liquidity and volatility notes, each with the figures behind it."""
    notes: list[RiskNote] = []
    if market is not None:
        notes += _volatility_notes(market)
        notes += _market_liquidity_notes(market)
    notes += _dex_liquidity_notes(liquidity, market)
    notes += _concentration_notes(market, supply)
    graded = [n for n in notes if n.severity != "info"]
    if not graded:
        return RiskRead(level="unknown", notes=notes)
    worst = max(_SEVERITY_ORDER[n.severity] for n in graded)
    if worst >= _SEVERITY_ORDER["high"]:
        return RiskRead(level="high", notes=notes)
    if worst == _SEVERITY_ORDER["moderate"]:
        return RiskRead(level="moderate", notes=notes)
    return RiskRead(level="low", notes=notes)


def _volatility_notes(m: MarketData) -> list[RiskNote]:
    notes: list[RiskNote] = []
    change = m.price_change_24h_pct
    day_range = None
    if m.high_24h_usd and m.low_24h_usd:
        day_range = round(100.0 * (m.high_24h_usd - m.low_24h_usd) / m.low_24h_usd, 2)
    if change is not None or day_range is not None:
        moved = abs(change or 0.0)
        if moved >= VOLATILITY_24H_HIGH_PCT or (day_range or 0.0) >= RANGE_24H_HIGH_PCT:
            severity, word = "high", "very volatile"
        elif moved >= VOLATILITY_24H_MODERATE_PCT or (day_range or 0.0) >= RANGE_24H_MODERATE_PCT:
            severity, word = "moderate", "volatile"
        else:
            severity, word = "low", "calm"
        parts = []
        if change is not None:
            parts.append(f"price moved {change:+.2f}% in 24h")
        if day_range is not None:
            parts.append(f"the 24h high was {day_range:.1f}% above the low")
        notes.append(
            RiskNote(
                category="volatility",
                severity=severity,
                finding=f"Last 24h were {word}: {' and '.join(parts)}.",
                figures={"price_change_24h_pct": change, "range_24h_pct": day_range},
            )
        )
    if m.ath_change_pct is not None:
        dd = m.ath_change_pct
        severity = (
            "high"
            if dd <= DRAWDOWN_HIGH_PCT
            else "moderate"
            if dd <= DRAWDOWN_MODERATE_PCT
            else "low"
        )
        when = f" (ATH {m.ath_date[:10]})" if m.ath_date else ""
        notes.append(
            RiskNote(
                category="volatility",
                severity=severity,
                finding=f"Trades {abs(dd):.1f}% below its all-time high{when}.",
                figures={"ath_change_pct": dd, "ath_usd": m.ath_usd, "ath_date": m.ath_date},
            )
        )
    return notes


def _market_liquidity_notes(m: MarketData) -> list[RiskNote]:
    notes: list[RiskNote] = []
    if m.volume_24h_usd is not None and m.market_cap_usd:
        turnover = round(m.volume_24h_usd / m.market_cap_usd, 4)
        if turnover >= TURNOVER_HEAVY:
            severity = "moderate"
            finding = (
                f"24h volume is {turnover:.0%} of market cap: very heavy turnover, "
                "trading is speculative."
            )
        elif turnover < TURNOVER_THIN:
            severity = "moderate"
            finding = (
                f"24h volume is only {turnover:.2%} of market cap: thin trading, "
                "large orders can move the price."
            )
        else:
            severity = "low"
            finding = f"24h volume is {turnover:.1%} of market cap: active, liquid trading."
        notes.append(
            RiskNote(
                category="liquidity",
                severity=severity,
                finding=finding,
                figures={
                    "volume_24h_usd": m.volume_24h_usd,
                    "market_cap_usd": m.market_cap_usd,
                    "volume_to_market_cap": turnover,
                },
            )
        )
    if m.market_cap_usd is not None:
        cap = m.market_cap_usd
        if cap < MICRO_CAP_USD:
            notes.append(
                RiskNote(
                    category="liquidity",
                    severity="high",
                    finding="Micro-cap token (under $10M market cap).",
                    figures={"market_cap_usd": cap},
                )
            )
        elif cap < SMALL_CAP_USD:
            notes.append(
                RiskNote(
                    category="liquidity",
                    severity="moderate",
                    finding="Small-cap token (under $100M market cap).",
                    figures={"market_cap_usd": cap},
                )
            )
    return notes


def _dex_liquidity_notes(liq: LiquidityData, m: MarketData | None) -> list[RiskNote]:
    if not liq.pairs or liq.total_dex_liquidity_usd is None:
        return []
    total = liq.total_dex_liquidity_usd
    if total < DEX_LIQUIDITY_HIGH_USD:
        severity, word = "high", "very shallow"
    elif total < DEX_LIQUIDITY_MODERATE_USD:
        severity, word = "moderate", "shallow"
    else:
        severity, word = "low", "deep"
    figures: dict[str, float | str | None] = {
        "total_dex_liquidity_usd": total,
        "pairs": float(len(liq.pairs)),
    }
    finding = f"DEX liquidity is {word}: ${total:,.0f} across {len(liq.pairs)} pair(s)."
    fdv = m.fully_diluted_valuation_usd if m else None
    if fdv and total:
        figures["fdv_to_liquidity"] = round(fdv / total, 2)
        finding += f" FDV is {fdv / total:.1f}x the pooled liquidity."
    return [RiskNote(category="liquidity", severity=severity, finding=finding, figures=figures)]


def _concentration_notes(m: MarketData | None, s: SupplyData | None) -> list[RiskNote]:
    notes: list[RiskNote] = []
    mc = m.market_cap_usd if m else None
    fdv = m.fully_diluted_valuation_usd if m else None
    if mc and fdv:
        ratio = round(fdv / mc, 3)
        share = s.circulating_share_pct if s else None
        share_text = f" ({share:.1f}% of supply circulates)" if share is not None else ""
        if ratio >= OVERHANG_HIGH_RATIO:
            severity = "high"
            finding = (
                f"FDV is {ratio:.2f}x market cap{share_text}: most supply is not yet "
                "circulating and sits with the issuer, team or investors; "
                "unlocks can dilute holders."
            )
        elif ratio >= OVERHANG_MODERATE_RATIO:
            severity = "moderate"
            finding = f"FDV is {ratio:.2f}x market cap{share_text}: a sizeable supply overhang."
        else:
            severity = "low"
            finding = f"FDV is {ratio:.2f}x market cap{share_text}: little or no supply overhang."
        notes.append(
            RiskNote(
                category="concentration",
                severity=severity,
                finding=finding,
                figures={
                    "fdv_to_market_cap": ratio,
                    "circulating_share_pct": share,
                    "circulating_supply": s.circulating if s else None,
                    "max_supply": s.max if s else None,
                },
            )
        )
    notes.append(
        RiskNote(
            category="concentration",
            severity="info",
            finding=(
                "Holder distribution is not on record, so wallet concentration is not assessed."
            ),
            figures={},
        )
    )
    return notes
