"""Constructed vault records added to the pipeline's output for the MCP tests.

The test store is filled by the real offline pipeline (recorded DefiLlama, Beefy and Yearn
responses, a few thousand real vaults, scored by the pipeline). A few vaults are added on
top, constructed to pin exact values: one per guideline band (APY 4.9, 5, 12, 25, 41), an
unrated one, a USDC vault on base, and two vaults with contract addresses for the wallet
tests. Their ids start with `test:`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from data_server.security import apply_security, inputs_for
from data_server.vaults.model import Vault

UPDATED_AT = int(datetime(2025, 12, 24, tzinfo=UTC).timestamp())


def _scored(vault: Vault, audits: int, age_days: int) -> Vault:
    return apply_security(vault, inputs_for(vault, audits=audits, protocol_age_days=age_days))


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
            ),
            audits=12,
            age_days=1000,
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
            ),
            audits=8,
            age_days=1900,
        ),
    ]


def constructed_vaults() -> list[Vault]:
    """Every constructed test vault."""
    return band_vaults() + wallet_vaults()
