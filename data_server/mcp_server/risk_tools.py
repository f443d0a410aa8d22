"""analyze_risk: the inputs behind a vault's security score, factor by factor."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from data_server.coaching import CHAIN_CONTEXT, band_label, yield_band
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import ToolOutput
from data_server.mcp_server.search import vault_line
from data_server.mcp_server.vault_index import VaultHit
from data_server.mcp_server.vault_tools import VaultIdInput, require_vault
from data_server.security import ScoreBreakdown, explain
from data_server.security.scoring import FLAG_PENALTIES, WEIGHTS

Assessment = Literal["good", "neutral", "concern", "unknown"]

# Chains with the longest records and rollup security inherited from Ethereum.
_STRONG_CHAINS = {"ethereum", "arbitrum", "optimism", "base"}


# What each factor and score component is called in an answer (the keys stay for code).
FACTOR_LABELS: dict[str, str] = {
    "audits": "Audits",
    "protocol_age": "Protocol age",
    "tvl": "Total value locked",
    "exploits": "Past exploits",
    "chain": "Chain",
    "impermanent_loss": "Impermanent loss",
    "il_risk": "Impermanent loss",
    "exposure": "Assets held",
    "reward_share": "Yield paid in rewards",
    "apy_level": "APY level",
    "status": "Status",
    "source_flag": "Flag from the source",
}


def factor_label(key: str) -> str:
    """A factor's or component's name in words ("protocol_age" → "Protocol age")."""
    return FACTOR_LABELS.get(key) or key.replace("_", " ").capitalize()


class RiskFactor(BaseModel):
    """One input of the risk picture and how it reads."""

    factor: str
    label: str = Field("", description="The factor's name in words, for people")
    value: str
    assessment: Assessment
    note: str


class ScorePart(BaseModel):
    """Points one component of the security score earned, out of its weight."""

    component: str
    label: str = Field(description="The component's name in words")
    points: float
    out_of: float


class RiskAnalysis(BaseModel):
    """A vault's security score explained."""

    vault: VaultHit
    security_score: float | None
    risk_rating: str | None
    factors: list[RiskFactor]
    concerns: int = Field(description="How many factors read as a concern")
    breakdown: ScoreBreakdown | None = Field(
        None,
        description="The score formula applied to the stored inputs: points per component "
        "and points lost per risk flag",
    )
    score_parts: list[ScorePart] = Field(
        default_factory=list,
        description="The breakdown's components in words, in the formula's order",
    )
    summary: str


def _factors(v: VaultHit) -> list[RiskFactor]:
    out: list[RiskFactor] = []

    def add(factor: str, value: object, assessment: Assessment, note: str) -> None:
        out.append(
            RiskFactor(
                factor=factor,
                label=factor_label(factor),
                value=str(value),
                assessment=assessment,
                note=note,
            )
        )

    if v.audits is None:
        add("audits", "unknown", "unknown", "No audit data for this protocol.")
    elif v.audits == 0:
        add("audits", 0, "concern", "No known audit of the protocol.")
    elif v.audits == 1:
        add("audits", 1, "neutral", "One known audit.")
    else:
        add("audits", v.audits, "good", f"{v.audits} known audits.")

    age = v.protocol_age_days
    if age is None:
        add("protocol_age", "unknown", "unknown", "Launch date unknown.")
    elif age < 180:
        add("protocol_age", f"{age} days", "concern", "Under six months live: little track record.")
    elif age < 730:
        add("protocol_age", f"{age} days", "neutral", "Under two years live.")
    else:
        add("protocol_age", f"{age} days", "good", "Over two years live.")

    if v.tvl_usd is None:
        add("tvl", "unknown", "unknown", "TVL unknown.")
    elif v.tvl_usd < 1_000_000:
        add("tvl", f"${v.tvl_usd:,.0f}", "concern", "Under $1M: thin liquidity, exit risk.")
    elif v.tvl_usd < 10_000_000:
        add("tvl", f"${v.tvl_usd:,.0f}", "neutral", "$1M–$10M locked.")
    else:
        add("tvl", f"${v.tvl_usd:,.0f}", "good", "Over $10M locked.")

    if v.exploits:
        add("exploits", v.exploits, "concern", "The protocol has been exploited before.")
    elif v.exploits == 0:
        add("exploits", 0, "good", "No known exploit.")

    if v.chain in _STRONG_CHAINS:
        add("chain", v.chain, "good", CHAIN_CONTEXT.get(v.chain, ""))
    else:
        add("chain", v.chain, "neutral", CHAIN_CONTEXT.get(v.chain, "Less established chain."))

    if v.il_risk:
        add("impermanent_loss", "yes", "concern", "Exposed to impermanent loss.")
    else:
        add("impermanent_loss", "no", "good", "No impermanent-loss exposure.")
    add(
        "exposure",
        v.exposure or "unknown",
        "neutral" if v.exposure == "multi" else "good" if v.exposure == "single" else "unknown",
        "Several assets: each one's price and peg matter."
        if v.exposure == "multi"
        else "Single asset.",
    )

    if v.reward_share is not None:
        if v.reward_share > 60:
            add("reward_share", f"{v.reward_share:.0f}%", "concern", "Yield is mostly emissions.")
        elif v.reward_share > 20:
            add(
                "reward_share", f"{v.reward_share:.0f}%", "neutral", "Part of the yield is rewards."
            )
        else:
            add("reward_share", f"{v.reward_share:.0f}%", "good", "Yield is mostly organic.")

    if v.apy is not None:
        band = yield_band(v.apy)
        assessment: Assessment = "concern" if band in ("high", "extreme") else "neutral"
        add("apy_level", f"{v.apy:.2f}%", assessment, band_label(v.apy))

    if v.status and v.status != "active":
        add(
            "status", v.status, "concern", "Not taking deposits (paused or retired); withdraw only."
        )
    for flag in v.source_flags:
        penalty = FLAG_PENALTIES.get(flag, 0.0)
        if penalty:
            add(
                "source_flag",
                flag,
                "concern",
                f"Risk flag from the source (−{penalty:.0f} points).",
            )
        else:
            add("source_flag", flag, "neutral", "Informational tag from the source; no penalty.")
    return out


async def analyze_risk(deps: ToolDeps, params: VaultIdInput) -> ToolOutput[RiskAnalysis]:
    """Explain a vault's security score and rating from its inputs."""
    vault = await require_vault(deps, params.vault_id)
    record = await deps.records.get_vault(vault.id) if deps.records is not None else None
    breakdown = explain(record) if record is not None else None
    if breakdown is not None:
        # The stored inputs are the ones the score was computed from; prefer them.
        inputs = breakdown.inputs
        vault = vault.model_copy(
            update={
                "audits": inputs.audits,
                "protocol_age_days": inputs.protocol_age_days,
                "exploits": inputs.exploits,
                "source_flags": list(inputs.source_flags),
            }
        )
    factors = _factors(vault)
    concerns = [f for f in factors if f.assessment == "concern"]
    score = "unscored" if vault.security_score is None else f"{vault.security_score:.0f}/100"
    summary = (
        f"{vault.name}: security {score}, risk {vault.risk_rating or 'unrated'}, "
        f"{len(concerns)} concern(s)"
        + (": " + ", ".join(f.label for f in concerns) if concerns else "")
        + "."
    )
    parts = (
        [
            ScorePart(
                component=name,
                label=factor_label(name),
                points=points,
                out_of=WEIGHTS.get(name, 0.0),
            )
            for name, points in breakdown.components.items()
        ]
        if breakdown is not None
        else []
    )
    data = RiskAnalysis(
        vault=vault,
        security_score=vault.security_score,
        risk_rating=vault.risk_rating,
        factors=factors,
        concerns=len(concerns),
        summary=summary,
        breakdown=breakdown,
        score_parts=parts,
    )
    lines = [summary, vault_line(vault), "Factors:"]
    lines += [_factor_line(f.label, str(f.value), f.assessment, f.note) for f in factors]
    if breakdown is not None:
        points = ", ".join(f"{p.label} {p.points:.1f}/{p.out_of:.0f}" for p in parts)
        lines.append(f"Score {breakdown.score:.1f} = {points}")
        if breakdown.penalties:
            lines.append(
                "minus flags: "
                + ", ".join(f"{flag} −{pts:.0f}" for flag, pts in breakdown.penalties.items())
            )
    return ToolOutput(data=data, text="\n".join(lines), coach=[vault.coach_item()])


def _factor_line(label: str, value: str, assessment: str, note: str) -> str:
    """One factor as a line of the answer; an assessment that only repeats the reading
    ("unknown (unknown)") is said once."""
    judged = value if assessment == value else f"{value} ({assessment})"
    return f"- {label}: {judged} {note}".rstrip()
