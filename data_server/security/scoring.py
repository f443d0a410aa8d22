"""The vault security score: 0 (worst) to 100 (best), explainable from its inputs.

Formula
-------
The score is a weighted sum of seven component scores, each in [0, 1], minus penalties
for risk flags reported by the source, clamped to [0, 100]:

=================  ======  =====================================================
component          weight  component score
=================  ======  =====================================================
audits             20      unknown 0.4; 0 → 0; 1 → 0.6; 2 → 0.8; 3 or more → 1
protocol age       20      unknown 0.3; else min(age_days / 730, 1)
TVL                20      unknown 0.2; else (log10(tvl) − 5) / 4 clamped (1e5 → 0, 1e9 → 1)
exploit history    15      0 → 1; 1 → 0.4; 2 or more → 0
chain              10      tier table (ethereum 1.0, major L2s and L1s 0.8, other 0.6)
impermanent loss   10      no IL risk → 1; IL risk → 0
exposure            5      single asset → 1; multi asset → 0.5
=================  ======  =====================================================

``score = clamp(Σ weight·component − Σ flag_penalty, 0, 100)``, rounded to one decimal.

Flag penalties (points) come from the sources' own risk checklists: Beefy's vault risks
(``beefy:notAudited`` 10, ``beefy:notVerified`` 10, ``beefy:notBattleTested`` 5,
``beefy:complex`` 5, ``beefy:notTimelocked`` 5, ``beefy:synthAsset`` 5, ``beefy:curated`` 2)
and platform tags (``beefy-platform:NO_TIMELOCK`` 5, ``…:HIGHLY_COMPLEX`` 5,
``…:NOT_BATTLE_TESTED`` 5), Yearn's ``yearn:risk_level_N`` (4·(N−1), N = 1…5), and
status flags (``status:eol`` 10, ``status:paused`` 10, ``yearn:emergency_shutdown`` 25).
Unknown flags cost nothing but stay in the inputs.

Risk rating from the score: ≥ 75 low, ≥ 55 medium, ≥ 35 high, else very_high.

Where the inputs come from
--------------------------
* TVL, chain, IL risk, exposure: the vault record itself.
* audits: Beefy's checklist (``notAudited`` → 0, passed → at least 1); Yearn's
  ``riskScore.externalProtocolAudit`` (1 → 4 audits … 5 → none); unknown otherwise.
* protocol age (a lower bound in every case): DefiLlama, the longest ``count`` (days of
  history) among the project's pools; Beefy, days since the platform's first Beefy vault
  in the configs; Yearn, ``riskScore.externalProtocolLongevity`` (1 → 730 days … 5 → 0).
* exploits: DefiLlama's hacks register (``https://api.llama.fi/hacks``), the records whose
  protocol name in slug form is the vault's protocol (``data_server.security.exploits``);
  the pipeline fetches it with the sources, and without it keeps 0 and says so in the run.
* flags: Beefy vault risks and platform tags, Yearn risk level and shutdown, vault status.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from data_server.vaults.model import RiskRating, SecurityInputs, Vault

WEIGHTS: dict[str, float] = {
    "audits": 20.0,
    "protocol_age": 20.0,
    "tvl": 20.0,
    "exploits": 15.0,
    "chain": 10.0,
    "il_risk": 10.0,
    "exposure": 5.0,
}

CHAIN_TIERS: dict[str, float] = {
    "ethereum": 1.0,
    "arbitrum": 0.8,
    "base": 0.8,
    "optimism": 0.8,
    "polygon": 0.8,
    "bsc": 0.8,
    "avalanche": 0.8,
    "gnosis": 0.8,
    "linea": 0.7,
    "zksync": 0.7,
    "sonic": 0.7,
}
DEFAULT_CHAIN_TIER = 0.6

FLAG_PENALTIES: dict[str, float] = {
    "beefy:notAudited": 10.0,
    "beefy:notVerified": 10.0,
    "beefy:notBattleTested": 5.0,
    "beefy:complex": 5.0,
    "beefy:notTimelocked": 5.0,
    "beefy:synthAsset": 5.0,
    "beefy:curated": 2.0,
    "beefy-platform:NO_TIMELOCK": 5.0,
    "beefy-platform:HIGHLY_COMPLEX": 5.0,
    "beefy-platform:NOT_BATTLE_TESTED": 5.0,
    "status:eol": 10.0,
    "status:paused": 10.0,
    "yearn:emergency_shutdown": 25.0,
}
FLAG_PENALTIES.update({f"yearn:risk_level_{n}": 4.0 * (n - 1) for n in range(1, 6)})

RATING_THRESHOLDS: list[tuple[float, RiskRating]] = [
    (75.0, "low"),
    (55.0, "medium"),
    (35.0, "high"),
]


class ScoreBreakdown(BaseModel):
    """A score with every component and penalty that made it."""

    score: float = Field(ge=0, le=100)
    risk_rating: RiskRating
    components: dict[str, float] = Field(description="Points earned per component")
    penalties: dict[str, float] = Field(description="Points lost per source flag")
    inputs: SecurityInputs


_AUDIT_COMPONENT = {0: 0.0, 1: 0.6, 2: 0.8}
_EXPLOIT_COMPONENT = {0: 1.0, 1: 0.4}


def _audits_component(audits: int | None) -> float:
    if audits is None:
        return 0.4
    return _AUDIT_COMPONENT.get(audits, 1.0)


def _age_component(days: int | None) -> float:
    if days is None:
        return 0.3
    return max(0.0, min(days / 730.0, 1.0))


def _tvl_component(tvl: float | None) -> float:
    if tvl is None:
        return 0.2
    if tvl <= 0:
        return 0.0
    return max(0.0, min((math.log10(tvl) - 5.0) / 4.0, 1.0))


def _exploits_component(exploits: int) -> float:
    return _EXPLOIT_COMPONENT.get(exploits, 0.0)


def rating_for(score: float) -> RiskRating:
    """Map a 0–100 score to a risk rating."""
    for threshold, rating in RATING_THRESHOLDS:
        if score >= threshold:
            return rating
    return "very_high"


def _points(inputs: SecurityInputs) -> tuple[dict[str, float], dict[str, float], float]:
    """(points per component, points lost per flag, the clamped and rounded score)."""
    parts = {
        "audits": _audits_component(inputs.audits),
        "protocol_age": _age_component(inputs.protocol_age_days),
        "tvl": _tvl_component(inputs.tvl_usd),
        "exploits": _exploits_component(inputs.exploits),
        "chain": CHAIN_TIERS.get(inputs.chain, DEFAULT_CHAIN_TIER),
        "il_risk": 0.0 if inputs.il_risk else 1.0,
        "exposure": 1.0 if inputs.exposure == "single" else 0.5,
    }
    components = {name: round(WEIGHTS[name] * value, 3) for name, value in parts.items()}
    penalties = {
        flag: FLAG_PENALTIES[flag] for flag in inputs.source_flags if flag in FLAG_PENALTIES
    }
    raw = sum(components.values()) - sum(penalties.values())
    return components, penalties, round(max(0.0, min(raw, 100.0)), 1)


def score_inputs(inputs: SecurityInputs) -> ScoreBreakdown:
    """Compute the score, its rating and its explanation from the inputs."""
    components, penalties, score = _points(inputs)
    return ScoreBreakdown(
        score=score,
        risk_rating=rating_for(score),
        components=components,
        penalties=penalties,
        inputs=inputs,
    )


def score_of(inputs: SecurityInputs) -> tuple[float, RiskRating]:
    """The score and its rating alone: what a vault record stores (no breakdown built).

    The same arithmetic as `_points`, in the same order, so the float is identical: the
    components are added one by one from left to right (float addition is not
    associative), each already rounded as `_points` rounds it. Components with few
    possible values come from small caches (`round(x, 3)` alone costs about a
    microsecond); a processor scores every vault it reads.
    """
    earned = _earned_head(inputs.audits, inputs.protocol_age_days)
    earned += round(WEIGHTS["tvl"] * _tvl_component(inputs.tvl_usd), 3)
    earned += _EXPLOIT_POINTS.get(inputs.exploits, _EXPLOIT_POINTS_MANY)
    earned += _chain_points(inputs.chain)
    earned += _IL_POINTS[bool(inputs.il_risk)]
    earned += _SINGLE_POINTS if inputs.exposure == "single" else _MULTI_POINTS
    if inputs.source_flags:
        flags = inputs.source_flags
        earned -= sum({f: FLAG_PENALTIES[f] for f in flags if f in FLAG_PENALTIES}.values())
    score = round(max(0.0, min(earned, 100.0)), 1)
    return score, rating_for(score)


@lru_cache(maxsize=256)
def _earned(name: str, value: float) -> float:
    return round(WEIGHTS[name] * value, 3)


@lru_cache(maxsize=4096)
def _earned_head(audits: int | None, days: int | None) -> float:
    # The first two terms of the sum, audits then protocol age, as `_points` adds them.
    return _earned("audits", _audits_component(audits)) + round(
        WEIGHTS["protocol_age"] * _age_component(days), 3
    )


@lru_cache(maxsize=256)
def _chain_points(chain: str) -> float:
    return _earned("chain", CHAIN_TIERS.get(chain, DEFAULT_CHAIN_TIER))


_EXPLOIT_POINTS = {n: round(WEIGHTS["exploits"] * v, 3) for n, v in _EXPLOIT_COMPONENT.items()}
_EXPLOIT_POINTS_MANY = round(WEIGHTS["exploits"] * _exploits_component(2), 3)
_IL_POINTS = {False: round(WEIGHTS["il_risk"] * 1.0, 3), True: round(WEIGHTS["il_risk"] * 0.0, 3)}
_SINGLE_POINTS = round(WEIGHTS["exposure"] * 1.0, 3)
_MULTI_POINTS = round(WEIGHTS["exposure"] * 0.5, 3)


def inputs_for(
    vault: Vault,
    *,
    audits: int | None = None,
    protocol_age_days: int | None = None,
    exploits: int = 0,
    source_flags: list[str] | None = None,
) -> SecurityInputs:
    """Security inputs of a vault: its own TVL, chain, IL and exposure plus protocol facts."""
    return SecurityInputs(
        audits=audits,
        protocol_age_days=protocol_age_days,
        tvl_usd=vault.tvl_usd,
        exploits=exploits,
        chain=vault.chain,
        il_risk=vault.il_risk,
        exposure=vault.exposure,
        source_flags=sorted(set(source_flags or [])),
    )


def apply_security(vault: Vault, inputs: SecurityInputs) -> Vault:
    """A copy of the vault carrying the inputs, the score and the rating."""
    score, rating = score_of(inputs)
    return vault.model_copy(
        update={"security_inputs": inputs, "security_score": score, "risk_rating": rating}
    )


def secured_vault(
    fields: dict[str, Any],
    *,
    audits: int | None = None,
    protocol_age_days: int | None = None,
    exploits: int = 0,
    source_flags: list[str] | None = None,
) -> Vault:
    """A vault validated once from its fields, with its security inputs, score and rating.

    The same record as ``apply_security(Vault(**fields), inputs_for(...))``, built without
    the intermediate unscored vault and its copy: a processor makes one per source row.
    """
    inputs = _validate_inputs(
        {
            "audits": audits,
            "protocol_age_days": protocol_age_days,
            "tvl_usd": fields.get("tvl_usd"),
            "exploits": exploits,
            "chain": fields["chain"],
            "il_risk": fields.get("il_risk", False),
            "exposure": fields.get("exposure", "single"),
            "source_flags": sorted(set(source_flags)) if source_flags else [],
        }
    )
    score, rating = score_of(inputs)
    return _validate_vault(
        {**fields, "security_inputs": inputs, "security_score": score, "risk_rating": rating}
    )


# The models' own validators, called without the Python wrappers of `SecurityInputs(...)`
# and `Vault.model_validate` (the same validation, the same instances): ~1 µs less per
# vault, and a processor builds one for every source row.
_validate_inputs = SecurityInputs.__pydantic_validator__.validate_python
_validate_vault = Vault.__pydantic_validator__.validate_python


def explain(vault: Vault) -> ScoreBreakdown | None:
    """Recompute the breakdown of a stored vault's score, or None when it has no inputs."""
    if vault.security_inputs is None:
        return None
    return score_inputs(vault.security_inputs)
