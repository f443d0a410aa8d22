"""EIP-155 chain ids of the chains the wallet tools read, by the slugs the vault data uses."""

from __future__ import annotations

CHAIN_IDS: dict[str, int] = {
    "ethereum": 1,
    "optimism": 10,
    "bsc": 56,
    "gnosis": 100,
    "polygon": 137,
    "base": 8453,
    "arbitrum": 42161,
    "avalanche": 43114,
}


def chain_id(chain: str) -> int | None:
    """The chain id of a slug, or None for a chain this table does not know."""
    return CHAIN_IDS.get(chain.lower())
