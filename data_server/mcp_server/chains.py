"""Chain slugs the tools accept, with the aliases people and models commonly use."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from albert.search import TypesenseError
from albert.validation import quoted_input
from data_server.chain_slugs import CHAIN_ALIASES, normalize_chain, unique_chains

__all__ = [
    "CHAIN_ALIASES",
    "ECHO_CHARS",
    "KNOWN_CHAINS",
    "ChainRegistry",
    "echo",
    "normalize_chain",
    "unique_chains",
]

if TYPE_CHECKING:
    from data_server.mcp_server.vault_index import VaultIndex

KNOWN_CHAINS: frozenset[str] = frozenset(
    {
        "ethereum", "arbitrum", "base", "optimism", "polygon", "bsc", "avalanche", "gnosis",
        "fantom", "sonic", "linea", "scroll", "zksync", "mantle", "blast", "mode", "celo",
        "moonbeam", "kava", "metis", "fraxtal", "manta", "berachain", "sei", "unichain",
        "cronos", "aurora", "polygon-zkevm", "hyperliquid", "solana", "aptos", "sui", "tron",
        "near", "ton", "starknet",
    }
)  # fmt: skip


ECHO_CHARS = 40


def echo(value: str) -> str:
    """A caller's value as an error quotes it: at most ECHO_CHARS characters of it."""
    return quoted_input(value, ECHO_CHARS)


class ChainRegistry:
    """Known chains: the static list plus whatever chains the index actually holds."""

    def __init__(self, index: VaultIndex | None = None, ttl_seconds: float = 60.0) -> None:
        self._index = index
        self._ttl = ttl_seconds
        self._indexed: frozenset[str] = frozenset()
        self._fetched_at = float("-inf")

    async def known(self) -> frozenset[str]:
        """Static chains plus the indexed ones (refreshed at most once per ttl)."""
        if self._index is not None and time.monotonic() - self._fetched_at > self._ttl:
            try:
                _, facets = await self._index.search(per_page=0, facet_by="chain")
                self._indexed = frozenset(
                    str(c["value"]).lower()
                    for f in facets
                    if f.get("field_name") == "chain"
                    for c in f.get("counts", [])
                )
            except TypesenseError:
                pass
            self._fetched_at = time.monotonic()
        return KNOWN_CHAINS | self._indexed

    async def check(self, chains: list[str]) -> None:
        """Raise ValueError naming the first chain nobody knows."""
        known = await self.known()
        for chain in chains:
            if chain not in known:
                listed = ", ".join(sorted(known))
                raise ValueError(f"unknown chain {echo(chain)}; use one of: {listed}")
