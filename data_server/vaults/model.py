"""The normalised vault record shared by the pipeline, the stores and the MCP tools.

One unit everywhere: APY values are **percent** (5.0 means 5 %), whatever the
source used (DefiLlama reports percent, Beefy/Yearn/Morpho report fractions).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# An APY above this (percent) is likely broken data or a one-off: such a vault, and one its
# source flags as an outlier, is left out of "highest APY" rankings unless asked for, and
# labelled wherever it is shown.
OUTLIER_APY = 1000.0
SOURCE_OUTLIER_FLAG = "defillama:outlier"


def is_outlier(apy: float | None, source_flags: list[str] | None) -> bool:
    """A likely outlier: an absurd APY, or the source's own outlier flag."""
    return (apy is not None and apy > OUTLIER_APY) or SOURCE_OUTLIER_FLAG in (source_flags or [])


Exposure = Literal["single", "multi"]
RiskRating = Literal["low", "medium", "high", "very_high"]
VaultStatus = Literal["active", "paused", "eol"]


class YieldPrediction(BaseModel):
    """DefiLlama's forecast of a pool's APY over the next weeks, as it publishes it."""

    model_config = ConfigDict(frozen=True)

    predicted_class: str | None = Field(None, description="'Stable/Up' or 'Down'")
    probability: float | None = Field(None, description="Percent")
    confidence: int | None = Field(None, description="1 (low) to 3 (high)")


class YieldTrend(BaseModel):
    """What a source says of where a vault's APY has been and may go (percent; the changes
    are percentage points)."""

    model_config = ConfigDict(frozen=True)

    apy_mean_30d: float | None = None
    apy_change_1d: float | None = None
    apy_change_7d: float | None = None
    apy_change_30d: float | None = None
    il_7d: float | None = Field(None, description="Impermanent loss over 7 days, percent")
    reward_tokens: list[str] = Field(default_factory=list, description="Reward token addresses")
    prediction: YieldPrediction | None = None


class SecurityInputs(BaseModel):
    """Every input of a security score, kept so a score can be explained."""

    audits: int | None = Field(None, description="Number of known audits of the protocol")
    protocol_age_days: int | None = Field(None, description="Days since the protocol launched")
    tvl_usd: float | None = Field(None, description="Vault TVL in USD at scoring time")
    exploits: int = Field(0, description="Known exploits of the protocol")
    chain: str = Field(description="Chain slug the vault lives on")
    il_risk: bool = Field(description="True when the position is exposed to impermanent loss")
    exposure: Exposure = Field(description="single-asset or multi-asset exposure")
    source_flags: list[str] = Field(
        default_factory=list, description="Risk flags reported by the source (e.g. Beefy risks)"
    )


class Vault(BaseModel):
    """One vault or yield pool, normalised across sources."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="Stable id: '{source}:{chain}:{native id}'")
    source: str = Field(description="Processor that produced it: defillama, beefy, yearn, …")
    name: str
    protocol: str = Field(description="Protocol slug, lowercase (e.g. 'aave-v3')")
    chain: str = Field(description="Chain slug, lowercase (e.g. 'ethereum', 'base')")
    address: str | None = Field(None, description="Vault contract address when known")
    asset_symbols: list[str] = Field(default_factory=list)
    underlying_tokens: list[str] = Field(default_factory=list, description="Token addresses")
    apy: float | None = Field(None, description="Total APY in percent")
    apy_base: float | None = Field(None, description="Base APY in percent")
    apy_reward: float | None = Field(None, description="Reward APY in percent")
    tvl_usd: float | None = None
    share_price: float | None = None
    stablecoin: bool = False
    il_risk: bool = False
    exposure: Exposure = "single"
    security_score: float | None = Field(None, ge=0, le=100, description="0 (worst) to 100 (best)")
    security_inputs: SecurityInputs | None = None
    risk_rating: RiskRating | None = None
    url: str | None = None
    trend: YieldTrend | None = Field(None, description="The source's APY trend, when it has one")
    status: VaultStatus = Field(
        "active", description="active, paused, or eol (retired: deposits closed, withdraw only)"
    )
    updated_at: int = Field(description="Unix seconds of the source data")


class HistoryPoint(BaseModel):
    """One daily point of a vault's history."""

    model_config = ConfigDict(frozen=True)

    vault_id: str
    timestamp: int = Field(description="Unix seconds (start of day, UTC)")
    apy: float | None = Field(None, description="Percent")
    tvl_usd: float | None = None
