"""Chain slugs as callers write them: the aliases people and models use, and one entry per chain.

Shared by the MCP tools' inputs and the wallet reader (which must never read a chain twice:
a chain read twice counts its holdings twice).
"""

from __future__ import annotations

from collections.abc import Iterable

CHAIN_ALIASES: dict[str, str] = {
    "eth": "ethereum",
    "mainnet": "ethereum",
    "ethereum-mainnet": "ethereum",
    "arb": "arbitrum",
    "arbitrum-one": "arbitrum",
    "arbitrum one": "arbitrum",
    "op": "optimism",
    "op-mainnet": "optimism",
    "matic": "polygon",
    "polygon-pos": "polygon",
    "bnb": "bsc",
    "bnb-chain": "bsc",
    "bnb chain": "bsc",
    "binance": "bsc",
    "avax": "avalanche",
    "xdai": "gnosis",
    "zksync-era": "zksync",
    "zksync era": "zksync",
    "era": "zksync",
    "bera": "berachain",
}


def normalize_chain(value: str) -> str:
    """Lowercase, trim, and resolve aliases ('ETH' → 'ethereum')."""
    slug = value.strip().lower()
    return CHAIN_ALIASES.get(slug, slug)


def unique_chains(values: Iterable[str]) -> list[str]:
    """Each chain once, in the order first named, after aliases are resolved
    (["eth", "Ethereum", "mainnet"] → ["ethereum"]); linear in the list's length."""
    return list(dict.fromkeys(normalize_chain(v) for v in values))
