"""Vault records for the MCP tests, and the index documents built from them.

Most vaults are real: the 30 DefiLlama `/pools` rows recorded on 2025-12-24
(data_server/fixtures/defillama/pools_camel_30_2025-12-24_timwf.json, see that folder's
README) and six pools whose daily history was recorded
(pool_history_daily_6pools_PaulApivat.json). They are mapped to `Vault` the way the
DefiLlama processor does (percent APY as reported) and scored with the pipeline's own
scoring. The protocol facts the scoring needs (audits, age) are not in those files; the
values below are test inputs, not claims about the protocols.

A few vaults are constructed to pin exact APYs for the guideline bands (4.9, 5, 12, 25, 41)
and one unrated vault; their ids start with `test:`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from data_server.security import apply_security, inputs_for
from data_server.vaults.model import HistoryPoint, Vault

FIXTURES = Path(__file__).resolve().parents[3] / "data_server" / "fixtures" / "defillama"
POOLS_FILE = FIXTURES / "pools_camel_30_2025-12-24_timwf.json"
HISTORY_FILE = FIXTURES / "pool_history_daily_6pools_PaulApivat.json"

# Test inputs for the scoring (audits, protocol age in days) by protocol slug.
PROTOCOL_FACTS: dict[str, tuple[int, int]] = {
    "aave-v3": (12, 1000),
    "curve-dex": (8, 1900),
    "convex-finance": (5, 1600),
    "maple": (4, 1500),
    "euler-v2": (6, 500),
    "falcon-finance": (1, 300),
    "merkl": (2, 700),
    "aerodrome-slipstream": (2, 500),
    "pancakeswap-amm-v3": (5, 1000),
}

UPDATED_AT = int(datetime(2025, 12, 24, tzinfo=UTC).timestamp())


def _slug(chain: str) -> str:
    return chain.strip().lower().replace(" ", "-")


def _scored(vault: Vault) -> Vault:
    audits, age = PROTOCOL_FACTS.get(vault.protocol, (0, 90))
    return apply_security(vault, inputs_for(vault, audits=audits, protocol_age_days=age))


def real_pool_vaults() -> list[Vault]:
    """The 30 recorded DefiLlama pools as scored vaults."""
    rows = json.loads(POOLS_FILE.read_text())["pools"]
    vaults = []
    for row in rows:
        chain = _slug(row["chain"])
        symbols = [s for s in row["symbol"].split("-") if s]
        vaults.append(
            _scored(
                Vault(
                    id=f"defillama:{chain}:{row['poolId']}",
                    source="defillama",
                    name=f"{row['project']} {row['symbol']}",
                    protocol=row["project"],
                    chain=chain,
                    asset_symbols=symbols,
                    underlying_tokens=row.get("underlyingTokens") or [],
                    apy=row.get("apy"),
                    apy_base=row.get("apyBase"),
                    apy_reward=row.get("apyReward"),
                    tvl_usd=row.get("tvlUsd"),
                    stablecoin=bool(row.get("stablecoin")),
                    il_risk=row.get("ilRisk") == "yes",
                    exposure=row.get("exposure") or "single",
                    url=row.get("defiLlamaUrl"),
                    updated_at=UPDATED_AT,
                )
            )
        )
    return vaults


def history_rows() -> list[dict[str, Any]]:
    """The recorded daily chart rows of six pools."""
    return json.loads(HISTORY_FILE.read_text())


def history_vaults_and_points() -> tuple[list[Vault], list[HistoryPoint]]:
    """One vault per recorded history pool (its latest row) and every daily point."""
    latest: dict[str, dict[str, Any]] = {}
    points = []
    for row in history_rows():
        chain = _slug(row["chain"])
        vault_id = f"defillama:{chain}:{row['pool_id_defillama']}"
        day = datetime.fromisoformat(row["timestamp"]).replace(tzinfo=UTC)
        points.append(
            HistoryPoint(
                vault_id=vault_id,
                timestamp=int(day.timestamp()),
                apy=row["apy"],
                tvl_usd=row["tvl_usd"],
            )
        )
        if vault_id not in latest or row["timestamp"] > latest[vault_id]["timestamp"]:
            latest[vault_id] = row
    vaults = []
    for vault_id, row in latest.items():
        chain = _slug(row["chain"])
        vaults.append(
            _scored(
                Vault(
                    id=vault_id,
                    source="defillama",
                    name=f"{row['protocol_slug']} {row['symbol']}",
                    protocol=row["protocol_slug"],
                    chain=chain,
                    asset_symbols=[s for s in row["symbol"].split("-") if s],
                    apy=row["apy"],
                    apy_base=row["apy_base"],
                    apy_reward=row["apy_reward"],
                    tvl_usd=row["tvl_usd"],
                    il_risk=True,
                    exposure="multi",
                    updated_at=int(datetime.fromisoformat(row["timestamp"]).timestamp()),
                )
            )
        )
    return vaults, points


# Constructed vaults with contract addresses, for the guideline bands and the wallet tests.
BAND_APYS = {"below_5": 4.9, "conservative": 5.0, "medium": 12.0, "high": 25.0, "extreme": 41.0}
WALLET_VAULT_ADDRESS = "0x1111111111111111111111111111111111111111"
WALLET_LEGACY_VAULT_ADDRESS = "0x2222222222222222222222222222222222222222"


def band_vaults() -> list[Vault]:
    """One rated vault per guideline band, a USDC vault on base, and one unrated vault."""
    out = []
    for band, apy in BAND_APYS.items():
        out.append(
            Vault(
                id=f"test:base:band-{band}",
                source="test",
                name=f"Band {band} vault",
                protocol="aave-v3",
                chain="base",
                asset_symbols=["BANDUSD"],
                apy=apy,
                apy_base=apy,
                apy_reward=0.0,
                tvl_usd=5_000_000,
                stablecoin=True,
                security_score=80.0,
                risk_rating="low",
                updated_at=UPDATED_AT,
            )
        )
    out.append(
        Vault(
            id="test:base:usdc-lending",
            source="test",
            name="Test USDC lending",
            protocol="aave-v3",
            chain="base",
            asset_symbols=["USDC"],
            apy=4.0,
            apy_base=4.0,
            tvl_usd=50_000_000,
            stablecoin=True,
            security_score=90.0,
            risk_rating="low",
            updated_at=UPDATED_AT,
        )
    )
    out.append(
        Vault(
            id="test:base:unrated",
            source="test",
            name="Unrated vault",
            protocol="newproto",
            chain="base",
            asset_symbols=["NOSCORE"],
            apy=12.0,
            tvl_usd=2_000_000,
            updated_at=UPDATED_AT,
        )
    )
    return out


def wallet_vaults() -> list[Vault]:
    """Two vaults with contract addresses on ethereum: an ERC-4626 one and a legacy one."""
    return [
        _scored(
            Vault(
                id="test:ethereum:usdc-4626",
                source="test",
                name="Test USDC 4626 vault",
                protocol="aave-v3",
                chain="ethereum",
                address=WALLET_VAULT_ADDRESS,
                asset_symbols=["USDC"],
                underlying_tokens=["0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"],
                apy=6.0,
                apy_base=6.0,
                tvl_usd=10_000_000,
                stablecoin=True,
                updated_at=UPDATED_AT,
            )
        ),
        _scored(
            Vault(
                id="test:ethereum:weth-legacy",
                source="test",
                name="Test WETH legacy vault",
                protocol="curve-dex",
                chain="ethereum",
                address=WALLET_LEGACY_VAULT_ADDRESS,
                asset_symbols=["WETH"],
                apy=22.0,
                apy_base=4.0,
                apy_reward=18.0,
                tvl_usd=3_000_000,
                share_price=1.5,
                updated_at=UPDATED_AT,
            )
        ),
    ]


def all_vaults() -> tuple[list[Vault], list[HistoryPoint]]:
    """Every vault of the test index and the history points of the write store."""
    history_vaults, points = history_vaults_and_points()
    return real_pool_vaults() + history_vaults + band_vaults() + wallet_vaults(), points
