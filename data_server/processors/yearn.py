"""Yearn: yDaemon's vault metadata store and APY store, per chain.

Files: ``data/meta/vaults/{chainID}.json`` (addresses, fees, price per share, total assets,
``metadata.riskLevel`` and the 11-factor ``riskScore``) and ``data/meta/apy/{chainID}.json``
(``netAPY``, ``points.weekAgo/monthAgo``, ``pricePerShare``) from the yDaemon repository.
APY values are **fractions** (0.07 = 7 %) and are converted to percent here.

The store has no token symbols, decimals or USD prices, so vaults carry no TVL in USD and
take their name from ``displayName`` when set.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx
from pydantic import BaseModel, ConfigDict, Field

from data_server.processors.base import (
    CHAIN_IDS,
    ProcessorResult,
    RawBatch,
    day_start,
    describe_error,
    fraction_to_percent,
    get_json,
    get_optional_json,
    parse_time,
    to_float,
    vault_id,
)
from data_server.security import secured_vault
from data_server.vaults.model import HistoryPoint

SOURCE = "yearn"
META_URL = "https://raw.githubusercontent.com/yearn/ydaemon/main/data/meta"
DEFAULT_CHAINS = (1, 10, 137, 250, 8453, 42161)

# riskScore factors are 1 (best) … 5 (worst); 0 means "not scored".
_AUDITS_BY_FACTOR = {1: 4, 2: 3, 3: 2, 4: 1, 5: 0}
_MIN_AGE_DAYS_BY_FACTOR = {1: 730, 2: 548, 3: 365, 4: 182, 5: 0}


class RiskScore(BaseModel):
    """The risk-score factors the security score uses."""

    model_config = ConfigDict(extra="ignore")

    external_protocol_audit: int = Field(0, alias="externalProtocolAudit")
    external_protocol_longevity: int = Field(0, alias="externalProtocolLongevity")


class Metadata(BaseModel):
    """The metadata block of a yDaemon vault."""

    model_config = ConfigDict(extra="ignore")

    is_retired: bool = Field(False, alias="isRetired")
    is_hidden: bool = Field(False, alias="isHidden")
    is_pool: bool = Field(False, alias="isPool")
    category: str = ""
    display_name: str = Field("", alias="displayName")
    display_symbol: str = Field("", alias="displaySymbol")
    stability: dict[str, Any] = Field(default_factory=dict)
    protocols: list[str] | None = None
    risk_level: int = Field(0, alias="riskLevel")
    risk_score: RiskScore | None = Field(None, alias="riskScore")


class YearnVaultMeta(BaseModel):
    """One yDaemon vault entry."""

    model_config = ConfigDict(extra="ignore")

    address: str
    token: str | None = None
    kind: str | None = None
    version: str | None = None
    chain_id: int = Field(alias="chainID")
    emergency_shutdown: bool = Field(False, alias="emergencyShutdown")
    metadata: Metadata = Field(default_factory=Metadata)


def _short(address: str) -> str:
    return f"{address[:6]}…{address[-4:]}"


class YearnProcessor:
    """Vaults and APY from yDaemon's metadata store, for the configured chain ids."""

    name: ClassVar[str] = SOURCE

    def __init__(self, *, meta_url: str = META_URL, chains: tuple[int, ...] = DEFAULT_CHAINS):
        self.meta_url = meta_url.rstrip("/")
        self.chains = chains

    async def fetch(self, client: httpx.AsyncClient) -> RawBatch:
        """GET vaults and apy per chain; fail only when no chain's vault file arrived."""
        batch = RawBatch(source=SOURCE)
        errors: list[str] = []
        for chain in self.chains:
            try:
                batch.responses[f"vaults:{chain}"] = await get_json(
                    client, f"{self.meta_url}/vaults/{chain}.json"
                )
            except (httpx.HTTPError, ValueError) as exc:
                errors.append(f"vaults {chain}: {describe_error(exc)}")
                continue
            await get_optional_json(
                client, f"{self.meta_url}/apy/{chain}.json", batch, f"apy:{chain}"
            )
        if not any(name.startswith("vaults:") for name in batch.responses):
            raise RuntimeError("yearn: no vault file could be fetched: " + "; ".join(errors))
        batch.warnings.extend(errors)
        return batch

    def parse(self, raw: RawBatch) -> ProcessorResult:
        """Normalise vaults; netAPY and its week/month-ago points become percent."""
        result = ProcessorResult(source=SOURCE)
        for name, response in raw.responses.items():
            if not name.startswith("vaults:"):
                continue
            chain_key = name.removeprefix("vaults:")
            body = response.body if isinstance(response.body, dict) else {}
            apy_body = raw.body(f"apy:{chain_key}")
            apy_body = apy_body if isinstance(apy_body, dict) else {}
            apys = apy_body.get("apy") if isinstance(apy_body.get("apy"), dict) else {}
            updated = (
                parse_time(apy_body.get("lastUpdate"))
                or parse_time(body.get("lastUpdate"))
                or response.received_at
            )
            entries = body.get("vaults") if isinstance(body.get("vaults"), dict) else {}
            for address, item in entries.items():
                try:
                    meta = YearnVaultMeta.model_validate(item)
                except ValueError as exc:
                    result.warnings.append(f"vault {address}: {exc.__class__.__name__}")
                    continue
                self._add(result, meta, apys.get(address.lower()) or {}, updated)
        return result

    def _add(
        self, result: ProcessorResult, meta: YearnVaultMeta, apy: dict[str, Any], updated: int
    ) -> None:
        chain = CHAIN_IDS.get(meta.chain_id, str(meta.chain_id))
        address = meta.address.lower()
        md = meta.metadata
        vid = vault_id(SOURCE, chain, address)
        net = fraction_to_percent(apy.get("netAPY"))
        extra = apy.get("extra") if isinstance(apy.get("extra"), dict) else {}
        reward = fraction_to_percent(extra.get("stakingRewardsAPY"))
        reward = reward if reward else None
        price = apy.get("pricePerShare") if isinstance(apy.get("pricePerShare"), dict) else {}
        stability = str(md.stability.get("stability") or "")
        stable = md.category == "Stablecoin" or stability == "Stable"
        name = md.display_name or f"Yearn {md.category or meta.kind or 'vault'} {_short(address)}"
        status = "eol" if md.is_retired else ("paused" if meta.emergency_shutdown else "active")
        fields = dict(
            id=vid,
            source=SOURCE,
            name=name,
            protocol="yearn-finance",
            chain=chain,
            address=address,
            asset_symbols=[],
            underlying_tokens=[meta.token.lower()] if meta.token else [],
            apy=net,
            apy_base=None if net is None else (net - reward if reward else net),
            apy_reward=reward,
            tvl_usd=None,
            share_price=to_float(price.get("today")) or None,
            stablecoin=stable,
            il_risk=md.is_pool and stability not in ("Stable", "Correlated"),
            exposure="multi" if md.is_pool else "single",
            url=f"https://yearn.fi/vaults/{meta.chain_id}/{meta.address}",
            status=status,
            updated_at=updated,
        )
        score = md.risk_score or RiskScore()
        flags: list[str] = []
        if 1 <= md.risk_level <= 5:
            flags.append(f"yearn:risk_level_{md.risk_level}")
        if meta.emergency_shutdown:
            flags.append("yearn:emergency_shutdown")
        if md.is_retired:
            flags.append("status:eol")
        if md.is_hidden:
            flags.append("yearn:hidden")
        result.vaults.append(
            secured_vault(
                fields,
                audits=_AUDITS_BY_FACTOR.get(score.external_protocol_audit),
                protocol_age_days=_MIN_AGE_DAYS_BY_FACTOR.get(score.external_protocol_longevity),
                source_flags=flags,
            )
        )
        # points.weekAgo/monthAgo are trailing-window APYs measured now, not past values,
        # so only today's point goes into the history.
        if net is not None:
            result.history.append(HistoryPoint(vault_id=vid, timestamp=day_start(updated), apy=net))
