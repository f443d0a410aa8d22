"""The `vaults` collection as the tools read it, built from Vault records for the tests.

Stand-in for the pipeline's publish step: the same flattening of `Vault` (security
inputs lifted to top-level fields) so the tests run against a real Typesense index.
"""

from __future__ import annotations

from typing import Any

from data_server.vaults.model import Vault


def vaults_schema(name: str) -> dict[str, Any]:
    """Typesense schema of a vaults collection."""
    opt = {"optional": True}
    return {
        "name": name,
        "fields": [
            {"name": "source", "type": "string", "facet": True},
            {"name": "name", "type": "string"},
            {"name": "protocol", "type": "string", "facet": True},
            {"name": "chain", "type": "string", "facet": True},
            {"name": "address", "type": "string", **opt},
            {"name": "asset_symbols", "type": "string[]", "facet": True},
            {"name": "underlying_tokens", "type": "string[]", **opt},
            {"name": "apy", "type": "float", **opt},
            {"name": "apy_base", "type": "float", **opt},
            {"name": "apy_reward", "type": "float", **opt},
            {"name": "reward_share", "type": "float", **opt},
            {"name": "tvl_usd", "type": "float", **opt},
            {"name": "share_price", "type": "float", **opt},
            {"name": "stablecoin", "type": "bool"},
            {"name": "il_risk", "type": "bool"},
            {"name": "exposure", "type": "string", "facet": True},
            {"name": "security_score", "type": "float", **opt},
            {"name": "risk_rating", "type": "string", "facet": True, **opt},
            {"name": "audits", "type": "int32", **opt},
            {"name": "protocol_age_days", "type": "int32", **opt},
            {"name": "exploits", "type": "int32", **opt},
            {"name": "source_flags", "type": "string[]", **opt},
            {"name": "status", "type": "string", "facet": True},
            {"name": "url", "type": "string", "index": False, **opt},
            {"name": "updated_at", "type": "int64"},
        ],
    }


def vault_document(v: Vault) -> dict[str, Any]:
    """One flattened document; None values are left out (optional fields)."""
    inputs = v.security_inputs
    reward_share = None
    if v.apy and v.apy > 0:
        reward_share = 100.0 * (v.apy_reward or 0.0) / v.apy
    doc: dict[str, Any] = {
        "id": v.id,
        "source": v.source,
        "name": v.name,
        "protocol": v.protocol,
        "chain": v.chain,
        "address": v.address,
        "asset_symbols": list(v.asset_symbols),
        "underlying_tokens": v.underlying_tokens,
        "apy": v.apy,
        "apy_base": v.apy_base,
        "apy_reward": v.apy_reward,
        "reward_share": reward_share,
        "tvl_usd": v.tvl_usd,
        "share_price": v.share_price,
        "stablecoin": v.stablecoin,
        "il_risk": v.il_risk,
        "exposure": v.exposure,
        "security_score": v.security_score,
        "risk_rating": v.risk_rating,
        "audits": inputs.audits if inputs else None,
        "protocol_age_days": inputs.protocol_age_days if inputs else None,
        "exploits": inputs.exploits if inputs else None,
        "source_flags": inputs.source_flags if inputs else None,
        "status": v.status,
        "url": v.url,
        "updated_at": v.updated_at,
    }
    return {k: val for k, val in doc.items() if val is not None}
