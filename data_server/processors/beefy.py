"""Beefy: vault configs, APY and TVL from ``https://api.beefy.finance``.

Endpoints: ``/vaults`` (the vault configs, required), ``/apy/breakdown`` or ``/apy``
(APY as **fractions**: 0.05 = 5 %, converted to percent here) and ``/tvl`` (USD per vault,
grouped by EVM chain id). Platform risk tags come from Beefy's ``platforms.json`` config.
The optional endpoints may be missing; vaults then carry no APY/TVL rather than wrong ones.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from data_server.processors.base import (
    CHAIN_IDS,
    DAY,
    ProcessorResult,
    RawBatch,
    chain_slug,
    day_start,
    fraction_to_percent,
    get_json,
    get_optional_json,
    is_stable_set,
    to_float,
    vault_id,
)
from data_server.security import secured_vault
from data_server.vaults.model import HistoryPoint, VaultStatus

SOURCE = "beefy"
API_URL = "https://api.beefy.finance"
PLATFORMS_URL = (
    "https://raw.githubusercontent.com/beefyfinance/beefy-v2/main/src/config/platforms.json"
)


class BeefyVaultConfig(BaseModel):
    """The fields of a Beefy vault config the pipeline uses."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str
    name: str
    chain: str | None = None
    network: str | None = None
    status: str = "active"
    type: str | None = None
    token: str | None = None
    token_address: str | None = Field(None, alias="tokenAddress")
    deposit_token_addresses: list[str] | None = Field(None, alias="depositTokenAddresses")
    earn_contract_address: str | None = Field(None, alias="earnContractAddress")
    platform_id: str | None = Field(None, alias="platformId")
    assets: list[str] = Field(default_factory=list)
    risks: dict[str, bool] = Field(default_factory=dict)
    created_at: int | None = Field(None, alias="createdAt")
    price_per_full_share: float | None = Field(None, alias="pricePerFullShare")

    @field_validator("risks", mode="before")
    @classmethod
    def _risks(cls, value: Any) -> dict[str, bool]:
        # Older configs list risk codes instead of a boolean checklist.
        if isinstance(value, list):
            return {str(code): True for code in value}
        if not isinstance(value, dict):
            return {}
        # The checklist also carries an `updatedAt` timestamp: keep only the boolean checks.
        return {str(k): v for k, v in value.items() if isinstance(v, bool)}

    @field_validator("price_per_full_share", mode="before")
    @classmethod
    def _ppfs(cls, value: Any) -> float | None:
        number = to_float(value)
        # The API serves it scaled by 1e18 as a decimal string.
        return None if number is None else number / 1e18

    @property
    def chain_slug(self) -> str:
        """The vault's chain (the API says `chain`, the configs say `network`)."""
        return chain_slug(self.chain or self.network or "unknown")


def _apy_maps(raw: RawBatch) -> tuple[dict[str, float], dict[str, float]]:
    """(total APY %, trading APR %) by vault id, from /apy/breakdown, else from /apy."""
    total: dict[str, float] = {}
    trading: dict[str, float] = {}
    breakdown = raw.body("apy_breakdown")
    if isinstance(breakdown, dict):
        for vid, entry in breakdown.items():
            if not isinstance(entry, dict):
                continue
            apy = fraction_to_percent(entry.get("totalApy"))
            if apy is not None:
                total[vid] = apy
            fees = fraction_to_percent(entry.get("tradingApr"))
            if fees is not None:
                trading[vid] = fees
    plain = raw.body("apy")
    if isinstance(plain, dict):
        for vid, value in plain.items():
            apy = fraction_to_percent(value)
            if apy is not None:
                total.setdefault(vid, apy)
    return total, trading


def _tvl_map(raw: RawBatch) -> dict[str, float]:
    """USD TVL by vault id; /tvl groups vaults under their chain id."""
    out: dict[str, float] = {}
    body = raw.body("tvl")
    if not isinstance(body, dict):
        return out
    for group in body.values():
        if not isinstance(group, dict):
            continue
        for vid, value in group.items():
            tvl = to_float(value)
            if tvl is not None:
                out[vid] = tvl
    return out


def _platform_flags(raw: RawBatch) -> dict[str, list[str]]:
    body = raw.body("platforms")
    flags: dict[str, list[str]] = {}
    if isinstance(body, list):
        for platform in body:
            if isinstance(platform, dict) and isinstance(platform.get("id"), str):
                flags[platform["id"]] = [
                    f"beefy-platform:{tag}" for tag in platform.get("risks") or []
                ]
    return flags


def _status(value: str) -> VaultStatus:
    return value if value in ("active", "paused", "eol") else "active"  # type: ignore[return-value]


class BeefyProcessor:
    """Vaults from the Beefy API (configs, APY, TVL) and Beefy's platform risk tags."""

    name: ClassVar[str] = SOURCE

    def __init__(self, *, api_url: str = API_URL, platforms_url: str = PLATFORMS_URL) -> None:
        self.api_url = api_url.rstrip("/")
        self.platforms_url = platforms_url

    async def fetch(self, client: httpx.AsyncClient) -> RawBatch:
        """GET /vaults (required), then /apy/breakdown, /apy, /tvl and platforms (optional)."""
        batch = RawBatch(source=SOURCE)
        batch.responses["vaults"] = await get_json(client, f"{self.api_url}/vaults")
        await get_optional_json(client, f"{self.api_url}/apy/breakdown", batch, "apy_breakdown")
        if "apy_breakdown" not in batch.responses:
            await get_optional_json(client, f"{self.api_url}/apy", batch, "apy")
        await get_optional_json(client, f"{self.api_url}/tvl", batch, "tvl")
        await get_optional_json(client, self.platforms_url, batch, "platforms")
        return batch

    def parse(self, raw: RawBatch) -> ProcessorResult:
        """Normalise configs; APY fractions become percent; TVL and risks are attached."""
        result = ProcessorResult(source=SOURCE)
        body = raw.body("vaults")
        configs: list[BeefyVaultConfig] = []
        for index, item in enumerate(body if isinstance(body, list) else []):
            try:
                configs.append(BeefyVaultConfig.model_validate(item))
            except ValueError as exc:
                result.warnings.append(f"vault config {index}: {exc.__class__.__name__}")
        updated = raw.received_at("vaults") or 0
        total_apy, trading_apr = _apy_maps(raw)
        tvl = _tvl_map(raw)
        platform_flags = _platform_flags(raw)

        # Beefy's first vault on a platform shows the platform has been live at least that
        # long: a lower bound of the protocol's age from the configs alone.
        first_seen: dict[str, int] = {}
        for config in configs:
            if config.platform_id and config.created_at:
                first_seen[config.platform_id] = min(
                    first_seen.get(config.platform_id, config.created_at), config.created_at
                )

        seen: set[str] = set()
        for config in configs:
            chain = config.chain_slug
            vid = vault_id(SOURCE, chain, config.id)
            if vid in seen:
                result.warnings.append(f"duplicate vault {vid}, first kept")
                continue
            seen.add(vid)
            apy = total_apy.get(config.id)
            apy_base = trading_apr.get(config.id)
            apy_reward = None
            if apy is not None and apy_base is not None:
                apy_reward = max(apy - apy_base, 0.0)
            tokens = config.deposit_token_addresses or (
                [config.token_address] if config.token_address else []
            )
            symbols = [a.upper() for a in config.assets] or (
                [config.token.upper()] if config.token else []
            )
            status = _status(config.status)
            fields = dict(
                id=vid,
                source=SOURCE,
                name=config.name,
                protocol="beefy",
                chain=chain,
                address=(config.earn_contract_address or "").lower() or None,
                asset_symbols=symbols,
                underlying_tokens=[t.lower() for t in tokens],
                apy=apy,
                apy_base=apy_base,
                apy_reward=apy_reward,
                tvl_usd=tvl.get(config.id),
                share_price=config.price_per_full_share,
                stablecoin=is_stable_set(symbols),
                il_risk=bool(config.risks.get("notCorrelated")) or config.type == "cowcentrated",
                exposure="single" if len(symbols) <= 1 else "multi",
                url=f"https://app.beefy.com/vault/{config.id}",
                status=status,
                updated_at=updated,
            )
            flags = [f"beefy:{name}" for name, failed in config.risks.items() if failed]
            flags += platform_flags.get(config.platform_id or "", [])
            if status != "active":
                flags.append(f"status:{status}")
            if config.platform_id:
                flags.append(f"beefy-platform-id:{config.platform_id}")
            started = first_seen.get(config.platform_id or "")
            age = None if started is None else max((updated - started) // DAY, 0)
            audits = 0 if config.risks.get("notAudited") else (1 if config.risks else None)
            vault = secured_vault(fields, audits=audits, protocol_age_days=age, source_flags=flags)
            result.vaults.append(vault)
            if vault.apy is not None or vault.tvl_usd is not None:
                result.history.append(
                    HistoryPoint(
                        vault_id=vid,
                        timestamp=day_start(updated),
                        apy=vault.apy,
                        tvl_usd=vault.tvl_usd,
                    )
                )
        # Chain ids let /tvl groups be checked against the configs' chains.
        known = {CHAIN_IDS.get(int(k)) for k in (raw.body("tvl") or {}) if str(k).isdigit()}
        missing = {v.chain for v in result.vaults} - known if known else set()
        if missing and tvl:
            result.warnings.append(f"no /tvl group for chains: {', '.join(sorted(missing))}")
        return result
