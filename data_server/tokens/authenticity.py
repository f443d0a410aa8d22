"""A deterministic authenticity heuristic (method "heuristic-v1") computed from market data.

None of the recorded sources measures authenticity, so the index derives a score from
figures they do measure. It is a documented rule of thumb, stored next to its method name
(`authenticity_method`) so nobody mistakes it for a measured value:

    start at 50, then add
    market-cap rank      <=10: +25, <=50: +18, <=100: +12, <=300: +6, <=1000: +2, none: -15
    market cap (USD)     >=1e10: +10, >=1e9: +6, >=1e8: +3
    24h volume / mcap    0.01..0.5: +8 (healthy), <0.001: -8 (barely traded),
                         >1: -12 (volume above market cap: wash-trading signal)
    mcap / FDV           >=0.9: +5 (little supply left to unlock), <0.5: -5
    DEX liquidity (USD)  <10,000: -15 (only when the source reports pool liquidity)
    DEX 24h trades       <50: -10 (only when the source reports trade counts)
    clamp to 0..100 and round to an integer.
"""

from __future__ import annotations

from pydantic import BaseModel

METHOD = "heuristic-v1"


class MarketFacts(BaseModel):
    """The measured inputs of the heuristic; None means the source does not report it."""

    rank: int | None = None
    marketcap: float | None = None
    fdv: float | None = None
    volume_24h: float | None = None
    liquidity: float | None = None
    trades_24h: int | None = None


def _rank_points(rank: int | None) -> int:
    if rank is None:
        return -15
    for limit, points in ((10, 25), (50, 18), (100, 12), (300, 6), (1000, 2)):
        if rank <= limit:
            return points
    return 0


def authenticity_score(f: MarketFacts) -> int:
    """The heuristic-v1 score, 0-100, of one token."""
    score = 50 + _rank_points(f.rank)
    if f.marketcap is not None:
        score += (
            10
            if f.marketcap >= 1e10
            else 6
            if f.marketcap >= 1e9
            else 3
            if f.marketcap >= 1e8
            else 0
        )
    if f.marketcap and f.volume_24h is not None:
        ratio = f.volume_24h / f.marketcap
        if 0.01 <= ratio <= 0.5:
            score += 8
        elif ratio < 0.001:
            score -= 8
        elif ratio > 1:
            score -= 12
    if f.marketcap and f.fdv:
        share = f.marketcap / f.fdv
        score += 5 if share >= 0.9 else -5 if share < 0.5 else 0
    if f.liquidity is not None and f.liquidity < 10_000:
        score -= 15
    if f.trades_24h is not None and f.trades_24h < 50:
        score -= 10
    return max(0, min(100, round(score)))
