"""analyze_yield and vault_history: one vault's yield, where it comes from, how it moved."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from albert.search import filters as fx
from data_server.coaching import band_label, yield_band
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import StrictInput, ToolFailure, ToolOutput
from data_server.mcp_server.search import vault_line
from data_server.mcp_server.vault_index import VaultHit
from data_server.vaults.model import HistoryPoint, YieldTrend

DAY = 86_400

VAULT_ID_DESCRIPTION = (
    "Vault id exactly as returned by search_vaults or top_yields "
    "(format '{source}:{chain}:{native id}')."
)


class VaultIdInput(StrictInput):
    """A vault id."""

    vault_id: str = Field(min_length=3, max_length=300, description=VAULT_ID_DESCRIPTION)


class HistoryStats(BaseModel):
    """Summary of a vault's daily history over a window."""

    days: int
    points: int
    first_day: str | None = Field(description="Date of the oldest point (UTC, YYYY-MM-DD)")
    last_day: str | None = Field(description="Date of the newest point (UTC, YYYY-MM-DD)")
    apy_mean: float | None
    apy_min: float | None
    apy_max: float | None
    apy_stdev: float | None
    apy_first: float | None
    apy_last: float | None
    tvl_first_usd: float | None
    tvl_last_usd: float | None
    tvl_change_pct: float | None


class PeerStats(BaseModel):
    """How the vault's APY compares with similar vaults (same chain, stablecoin flag, exposure)."""

    peers: int
    median_apy: float | None
    percentile: float | None = Field(description="Share of peers with a lower APY, percent")


Sustainability = Literal["organic", "mixed", "reward_driven", "unknown"]


class YieldAnalysis(BaseModel):
    """Where a vault's yield comes from and how much to trust it."""

    vault: VaultHit
    apy_band: str | None
    apy_band_label: str | None
    base_share_pct: float | None = Field(description="Share of APY from fees/interest, percent")
    reward_share_pct: float | None = Field(description="Share of APY from reward tokens, percent")
    sustainability: Sustainability
    trend: YieldTrend | None = Field(
        None, description="The source's 30-day mean, APY changes and forecast, when it has them"
    )
    sustainable: bool | None = Field(
        None,
        description="Whether today's APY looks likely to hold: mostly base yield, near its "
        "30-day mean, not forecast down. None when too little is known.",
    )
    sustainable_because: list[str] = Field(default_factory=list)
    history: HistoryStats | None
    peers: PeerStats
    notes: list[str]


class AnalyzeYieldInput(VaultIdInput):
    """Arguments of analyze_yield."""

    history_days: int = Field(
        30, ge=7, le=365, description="Window of daily history to summarise, 7–365 days."
    )


async def require_vault(deps: ToolDeps, vault_id: str) -> VaultHit:
    """The indexed vault with this id, or a ToolFailure telling where ids come from."""
    vault = await deps.index.get(vault_id.strip())
    if vault is None:
        raise ToolFailure(
            f"no vault with id {vault_id!r}; ids come from search_vaults or top_yields results"
        )
    return vault


def _day(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def history_stats(points: list[HistoryPoint], days: int) -> HistoryStats:
    """Mean, range, spread and drift of APY and TVL over the points."""
    apys = [p.apy for p in points if p.apy is not None]
    tvls = [p.tvl_usd for p in points if p.tvl_usd is not None]
    tvl_change = None
    if len(tvls) >= 2 and tvls[0]:
        tvl_change = round(100.0 * (tvls[-1] - tvls[0]) / tvls[0], 2)
    return HistoryStats(
        days=days,
        points=len(points),
        first_day=_day(points[0].timestamp) if points else None,
        last_day=_day(points[-1].timestamp) if points else None,
        apy_mean=round(statistics.fmean(apys), 4) if apys else None,
        apy_min=min(apys) if apys else None,
        apy_max=max(apys) if apys else None,
        apy_stdev=round(statistics.pstdev(apys), 4) if len(apys) >= 2 else None,
        apy_first=apys[0] if apys else None,
        apy_last=apys[-1] if apys else None,
        tvl_first_usd=tvls[0] if tvls else None,
        tvl_last_usd=tvls[-1] if tvls else None,
        tvl_change_pct=tvl_change,
    )


async def _history(deps: ToolDeps, vault_id: str, days: int) -> list[HistoryPoint] | None:
    if deps.history is None:
        return None
    return await deps.history.history(vault_id, days)


async def _peers(deps: ToolDeps, vault: VaultHit) -> PeerStats:
    parts: list[str | None] = [
        fx.equals("chain", vault.chain),
        fx.equals("stablecoin", vault.stablecoin),
        fx.compare("tvl_usd", ">=", 100_000),
        fx.compare("apy", ">=", 0),
    ]
    if vault.exposure:
        parts.append(fx.equals("exposure", vault.exposure))
    _, hits = await deps.index.scan(filter_by=fx.all_of(parts) or "", max_hits=500)
    apys = sorted(h.apy for h in hits if h.apy is not None and h.id != vault.id)
    if not apys:
        return PeerStats(peers=0, median_apy=None, percentile=None)
    percentile = None
    if vault.apy is not None:
        percentile = round(100.0 * sum(1 for a in apys if a < vault.apy) / len(apys), 1)
    return PeerStats(peers=len(apys), median_apy=statistics.median(apys), percentile=percentile)


def _holds(
    apy: float | None, reward_share: float | None, trend: YieldTrend | None
) -> tuple[bool | None, list[str]]:
    """Whether today's APY looks likely to hold, with the reasons for the verdict (each
    from a figure the source gave); None when none of them is known."""
    against: list[str] = []
    for_: list[str] = []
    if reward_share is not None:
        if reward_share > 50:
            against.append(f"{reward_share:.0f}% of it is paid in reward tokens")
        else:
            for_.append(f"{100 - reward_share:.0f}% of it is base yield")
    mean = trend.apy_mean_30d if trend is not None else None
    if apy is not None and mean:
        if apy > 1.5 * mean:
            against.append(f"it is well above its 30-day mean of {mean:.2f}%")
        else:
            for_.append(f"it is near or below its 30-day mean of {mean:.2f}%")
    prediction = trend.prediction if trend is not None else None
    if prediction is not None and prediction.predicted_class:
        odds = "" if prediction.probability is None else f", {prediction.probability:.0f}%"
        said = f"DefiLlama forecasts {prediction.predicted_class}{odds}"
        down = prediction.predicted_class.lower() == "down"
        (against if down and (prediction.probability or 0) >= 60 else for_).append(said)
    if against:
        return False, against
    return (True, for_) if for_ else (None, [])


def _trend_lines(trend: YieldTrend) -> list[str]:
    """The source's trend of the APY, in the words of the answer."""
    lines: list[str] = []
    if trend.apy_mean_30d is not None:
        lines.append(f"30-day mean APY {trend.apy_mean_30d:.2f}%.")
    changes = [
        f"{change:+.2f} points over {days}"
        for change, days in (
            (trend.apy_change_1d, "1 day"),
            (trend.apy_change_7d, "7 days"),
            (trend.apy_change_30d, "30 days"),
        )
        if change is not None
    ]
    if changes:
        lines.append("APY change: " + ", ".join(changes) + ".")
    prediction = trend.prediction
    if prediction is not None and prediction.predicted_class:
        detail = [
            f"{prediction.probability:.0f}% probability"
            if prediction.probability is not None
            else "",
            f"confidence {prediction.confidence}/3" if prediction.confidence is not None else "",
        ]
        extra = ", ".join(d for d in detail if d)
        lines.append(
            f"DefiLlama's forecast: {prediction.predicted_class}"
            + (f" ({extra})." if extra else ".")
        )
    if trend.il_7d is not None:
        lines.append(f"Impermanent loss over 7 days: {trend.il_7d:.2f}%.")
    if trend.reward_tokens:
        lines.append(f"Rewards are paid in {len(trend.reward_tokens)} token(s).")
    return lines


def _sustainability(reward_share: float | None) -> Sustainability:
    if reward_share is None:
        return "unknown"
    if reward_share <= 20:
        return "organic"
    if reward_share <= 60:
        return "mixed"
    return "reward_driven"


async def analyze_yield(deps: ToolDeps, params: AnalyzeYieldInput) -> ToolOutput[YieldAnalysis]:
    """Decompose one vault's APY, summarise its history and rank it among peers."""
    vault = await require_vault(deps, params.vault_id)
    points = await _history(deps, vault.id, params.history_days)
    stats = history_stats(points, params.history_days) if points else None
    peers = await _peers(deps, vault)
    reward_share = vault.reward_share
    base_share = None if reward_share is None else round(100.0 - reward_share, 4)
    sustainability = _sustainability(reward_share)
    trend = YieldTrend.model_validate(vault.trend) if vault.trend else None
    sustainable, because = _holds(vault.apy, reward_share, trend)
    notes: list[str] = []
    if vault.apy is None:
        notes.append("The source reports no APY for this vault.")
    if sustainability == "reward_driven":
        notes.append(
            "Most of the yield is paid in reward tokens; it falls when emissions end or the "
            "reward token's price drops."
        )
    if stats and stats.apy_stdev is not None and stats.apy_mean:
        if stats.apy_stdev > 0.5 * abs(stats.apy_mean):
            notes.append("APY has been volatile over the window (stdev above half the mean).")
        if vault.apy is not None and vault.apy > 1.5 * stats.apy_mean:
            notes.append("Today's APY is well above its window average; expect it to revert.")
    if stats and stats.tvl_change_pct is not None and stats.tvl_change_pct < -30:
        notes.append(f"TVL fell {abs(stats.tvl_change_pct):.0f}% over the window.")
    if points is None:
        notes.append("History is not available from this server.")
    elif not points:
        notes.append(f"No history points in the last {params.history_days} days.")
    if peers.percentile is not None and peers.percentile >= 90:
        notes.append("APY is in the top 10% of comparable vaults; check why it pays more.")
    if vault.il_risk:
        notes.append("The position is exposed to impermanent loss, which the APY does not show.")

    data = YieldAnalysis(
        vault=vault,
        apy_band=yield_band(vault.apy) if vault.apy is not None else None,
        apy_band_label=band_label(vault.apy) if vault.apy is not None else None,
        base_share_pct=base_share,
        reward_share_pct=reward_share,
        sustainability=sustainability,
        trend=trend,
        sustainable=sustainable,
        sustainable_because=because,
        history=stats,
        peers=peers,
        notes=notes,
    )
    lines = [f"Yield analysis of {vault.name}", vault_line(vault)]
    if data.apy_band_label:
        lines.append(f"Band: {data.apy_band_label}.")
    if reward_share is not None:
        lines.append(
            f"Source of yield: {base_share:.0f}% base, {reward_share:.0f}% rewards "
            f"({sustainability.replace('_', ' ')})."
        )
    if trend is not None:
        lines += _trend_lines(trend)
    if sustainable is not None:
        verdict = "Likely to hold" if sustainable else "Not likely to hold"
        lines.append(f"Sustainable? {verdict}: {'; '.join(because)}.")
    if stats:
        lines.append(
            f"{stats.points} daily points {stats.first_day}..{stats.last_day}: "
            f"APY mean {stats.apy_mean}%, range {stats.apy_min}–{stats.apy_max}%"
            # One point has no spread: say nothing rather than "stdev None".
            + (f", stdev {stats.apy_stdev}." if stats.apy_stdev is not None else ".")
        )
    if peers.peers:
        lines.append(
            f"Peers on {vault.chain}: {peers.peers}, median APY {peers.median_apy:.2f}%; this "
            f"vault beats {peers.percentile}% of them."
        )
    lines += [f"Note: {n}" for n in notes]
    return ToolOutput(data=data, text="\n".join(lines), coach=[vault.coach_item()])


class VaultHistoryInput(VaultIdInput):
    """Arguments of vault_history."""

    days: int = Field(30, ge=1, le=365, description="How many days back, 1–365 (default 30).")


class VaultHistoryResult(BaseModel):
    """Daily APY and TVL points of one vault, oldest first."""

    vault_id: str
    vault: VaultHit | None = Field(description="The vault as indexed now, when it is indexed")
    days: int
    summary: HistoryStats | None
    points: list[HistoryPoint]


async def vault_history(
    deps: ToolDeps, params: VaultHistoryInput
) -> ToolOutput[VaultHistoryResult]:
    """The daily series of one vault over the last `days` days."""
    if deps.history is None:
        raise ToolFailure("history is not available from this server (no write store configured)")
    vault_id = params.vault_id.strip()
    vault = await deps.index.get(vault_id)
    points = await _history(deps, vault_id, params.days) or []
    if vault is None and not points:
        raise ToolFailure(
            f"no vault with id {vault_id!r}; ids come from search_vaults or top_yields results"
        )
    summary = history_stats(points, params.days) if points else None
    data = VaultHistoryResult(
        vault_id=vault_id, vault=vault, days=params.days, summary=summary, points=points
    )
    name = vault.name if vault else vault_id
    if not points:
        text = f"No history points for {name} in the last {params.days} days."
    else:
        text = "\n".join(
            [
                f"History of {name}: {len(points)} daily points, {summary.first_day} to "  # type: ignore[union-attr]
                f"{summary.last_day} (UTC).",  # type: ignore[union-attr]
                f"APY {summary.apy_first}% → {summary.apy_last}% (mean {summary.apy_mean}%, "  # type: ignore[union-attr]
                f"min {summary.apy_min}%, max {summary.apy_max}%).",  # type: ignore[union-attr]
                f"TVL change: {summary.tvl_change_pct}%."  # type: ignore[union-attr]
                if summary and summary.tvl_change_pct is not None
                else "TVL change: n/a.",
            ]
        )
    return ToolOutput(data=data, text=text, coach=[vault.coach_item()] if vault else [])
