"""Coaching attached to tool results: the yield-versus-risk framework and chain/protocol context.

A result that carries a risk rating gets a second content part built here, so the model
reads the yield next to what that yield usually costs in risk. Results without a risk
rating get none: the framework is about weighing a rated risk against a yield.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

YieldBand = Literal["below_5", "conservative", "medium", "high", "extreme"]

# (band, lower bound inclusive, label). Upper bounds are the next band's lower bound, except
# that exactly 40 % still counts as high: the framework says "above 40 %" is extreme.
_BANDS: tuple[tuple[YieldBand, float, str], ...] = (
    ("below_5", float("-inf"), "below 5% — may not justify the risk"),
    ("conservative", 5.0, "5–10% — conservative"),
    ("medium", 10.0, "10–20% — medium"),
    ("high", 20.0, "20–40% — high"),
)

BAND_LABELS: dict[YieldBand, str] = {band: label for band, _, label in _BANDS}
BAND_LABELS["extreme"] = "above 40% — extreme"

GUIDELINES_HEADER = "Yield-versus-risk guidelines"

FRAMEWORK = (
    "Weigh every yield against its risk rating before recommending it:\n"
    "- APY below 5%: may not justify the risk; a rated risk for a low yield is rarely worth it.\n"
    "- 5–10%: conservative; typical of lending markets and stablecoin pools on mature protocols.\n"
    "- 10–20%: medium; expect reward emissions, leverage or volatile assets behind it.\n"
    "- 20–40%: high; usually emissions that can stop, impermanent loss or young protocols.\n"
    "- Above 40%: extreme; treat as speculative and say so, whatever the rating.\n"
    "A higher security score lowers, but never removes, smart-contract risk. Reward APY paid in "
    "a protocol's own token is less durable than base APY earned from fees or interest."
)

CHAIN_CONTEXT: dict[str, str] = {
    "ethereum": "Ethereum mainnet: deepest liquidity and longest security record; high gas makes "
    "small positions costly.",
    "arbitrum": "Arbitrum: optimistic rollup on Ethereum; cheap gas, 7-day withdrawal window via "
    "the canonical bridge.",
    "optimism": "Optimism: optimistic rollup on Ethereum; cheap gas, 7-day canonical withdrawals.",
    "base": "Base: Coinbase-operated optimistic rollup; cheap gas, young but fast-growing DeFi.",
    "polygon": "Polygon PoS: sidechain with its own validator set; weaker security than rollups.",
    "bsc": "BNB Smart Chain: small validator set; many forks and a history of exploits.",
    "avalanche": "Avalanche C-Chain: independent L1 with its own validator set.",
    "gnosis": "Gnosis Chain: independent L1 with small DeFi liquidity.",
    "solana": "Solana: non-EVM L1 with fast finality and a history of network outages.",
    "linea": "Linea: zk rollup on Ethereum, young DeFi ecosystem.",
    "scroll": "Scroll: zk rollup on Ethereum, young DeFi ecosystem.",
    "zksync": "zkSync Era: zk rollup on Ethereum with its own VM differences.",
    "mantle": "Mantle: optimistic rollup with an external data-availability layer.",
    "sonic": "Sonic: young L1 (formerly Fantom), incentive-driven yields.",
}

PROTOCOL_CONTEXT: dict[str, str] = {
    "aave-v3": "Aave v3: the largest lending market; many audits, years without a core exploit.",
    "aave-v2": "Aave v2: older lending market, winding down in favour of v3.",
    "compound-v3": "Compound v3: single-borrow-asset lending markets, heavily audited.",
    "compound-v2": "Compound v2: long-running lending market, legacy version.",
    "morpho": "Morpho: lending vaults curated by third parties; risk depends on the curator.",
    "morpho-blue": "Morpho Blue: isolated lending markets; risk depends on each market's oracle "
    "and collateral.",
    "spark": "Spark: lending market of the Sky (Maker) ecosystem.",
    "curve-dex": "Curve: stable and pegged-asset AMM; depeg risk of the pool's assets applies.",
    "convex-finance": "Convex: boosts Curve LP rewards; adds a layer on top of Curve's risks.",
    "yearn-finance": "Yearn: automated strategy vaults; strategy risk on top of the base "
    "protocols.",
    "yearn": "Yearn: automated strategy vaults; strategy risk on top of the base protocols.",
    "beefy": "Beefy: auto-compounding vaults on many chains; inherits the farmed protocol's risks.",
    "uniswap-v3": "Uniswap v3: concentrated-liquidity AMM; impermanent loss and range risk.",
    "uniswap-v2": "Uniswap v2: constant-product AMM; impermanent loss on volatile pairs.",
    "aerodrome-v1": "Aerodrome: Base's main AMM; yields are mostly AERO emissions.",
    "aerodrome-slipstream": "Aerodrome Slipstream: concentrated liquidity on Base; emissions "
    "plus range and impermanent-loss risk.",
    "pancakeswap-amm": "PancakeSwap AMM: constant-product AMM, CAKE emissions.",
    "pancakeswap-amm-v3": "PancakeSwap v3: concentrated liquidity, CAKE emissions, range risk.",
    "lido": "Lido: liquid ETH staking; validator and stETH depeg risk.",
    "pendle": "Pendle: yield tokenisation; fixed yields until maturity, complex mechanics.",
    "ethena": "Ethena: synthetic dollar backed by hedged positions; funding-rate risk.",
    "fluid": "Fluid: lending and DEX combined by Instadapp; young design.",
    "euler": "Euler: modular lending; v1 was exploited in 2023, v2 is a rewrite.",
    "gearbox": "Gearbox: leveraged positions; liquidation risk on top of the base protocols.",
}


class CoachItem(BaseModel):
    """The fields of one result that the coaching reads."""

    name: str
    apy: float | None = None
    risk_rating: str | None = None
    chain: str | None = None
    protocol: str | None = None


def yield_band(apy: float) -> YieldBand:
    """The framework band of an APY in percent (4.9 → below_5, 5 → conservative, 41 → extreme)."""
    if apy > 40.0:
        return "extreme"
    band: YieldBand = "below_5"
    for name, lower, _ in _BANDS:
        if apy >= lower:
            band = name
    return band


def band_label(apy: float) -> str:
    """Human label of the band an APY falls in."""
    return BAND_LABELS[yield_band(apy)]


def has_risk_rating(items: Iterable[CoachItem]) -> bool:
    """True when at least one item carries a risk rating."""
    return any(item.risk_rating for item in items)


def _unique(values: Iterable[str | None]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        if value:
            seen.setdefault(value.lower(), None)
    return list(seen)


def guidelines_block(items: Sequence[CoachItem], *, max_listed: int = 10) -> str | None:
    """The guidelines content part for rated items, or None when no item has a risk rating."""
    rated = [item for item in items if item.risk_rating]
    if not rated:
        return None
    lines = [f"## {GUIDELINES_HEADER}", FRAMEWORK, "", "How these results fall:"]
    for item in rated[:max_listed]:
        if item.apy is None:
            where = "APY unknown"
        else:
            where = f"APY {item.apy:.2f}% → {band_label(item.apy)}"
        lines.append(f"- {item.name}: {where}; risk rating {item.risk_rating}")
    if len(rated) > max_listed:
        lines.append(f"- … and {len(rated) - max_listed} more rated results")
    chains = _unique(item.chain for item in rated)
    protocols = _unique(item.protocol for item in rated)
    context = [CHAIN_CONTEXT[c] for c in chains if c in CHAIN_CONTEXT]
    context += [PROTOCOL_CONTEXT[p] for p in protocols if p in PROTOCOL_CONTEXT]
    unknown = [c for c in chains if c not in CHAIN_CONTEXT]
    unknown += [p for p in protocols if p not in PROTOCOL_CONTEXT]
    if context or unknown:
        lines += ["", "Context:"]
        lines += [f"- {text}" for text in context]
        if unknown:
            lines.append(
                f"- No curated notes for {', '.join(unknown)}: check audits, age and TVL history "
                "before trusting the yield."
            )
    return "\n".join(lines)
