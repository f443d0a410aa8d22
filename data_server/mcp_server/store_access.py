"""Async adapters from the write store to what the tools read (history, vault catalog).

Every read goes through `StoreCalls`: in a worker thread, bounded, `StoreUnavailable` when
the store does not answer in time (the tools then say the vault database is unavailable).
"""

from __future__ import annotations

import time

from data_server.store import VaultStore
from data_server.store.calls import StoreCalls
from data_server.vaults.model import HistoryPoint, Vault

DAY = 86_400


class StoreHistory:
    """Vault history from the write store, read off the event loop."""

    def __init__(self, store: VaultStore, calls: StoreCalls | None = None) -> None:
        self._store = store
        self._calls = calls or StoreCalls(store)

    def _window(self, vault_id: str, days: int) -> list[HistoryPoint]:
        newest = self._store.history(vault_id, limit=1)
        if not newest:
            return []
        since = newest[-1].timestamp - (days - 1) * DAY
        return self._store.history(vault_id, since=since)

    async def history(self, vault_id: str, days: int) -> list[HistoryPoint]:
        """The last `days` days of points, ending at the newest one, oldest first."""
        return await self._calls(self._window, vault_id, days)


class StoreCatalog:
    """Vaults with known contract addresses per chain, cached briefly (the pipeline is slow)."""

    def __init__(
        self, store: VaultStore, ttl_seconds: float = 60.0, calls: StoreCalls | None = None
    ) -> None:
        self._store = store
        self._calls = calls or StoreCalls(store)
        self._ttl = ttl_seconds
        self._cache: dict[str, list[Vault]] = {}
        self._loaded_at = float("-inf")

    def _load(self) -> dict[str, list[Vault]]:
        by_chain: dict[str, list[Vault]] = {}
        for vault in self._store.iter_vaults():
            # Retired vaults stay in: a wallet may still hold shares it should withdraw.
            if vault.address:
                by_chain.setdefault(vault.chain, []).append(vault)
        return by_chain

    async def vaults_with_addresses(self, chain: str) -> list[Vault]:
        """Every stored vault on `chain` whose contract address is known."""
        if time.monotonic() - self._loaded_at > self._ttl:
            self._cache = await self._calls(self._load)
            self._loaded_at = time.monotonic()
        return list(self._cache.get(chain, []))


class StoreRecords:
    """Full vault records (with their security inputs) from the write store."""

    def __init__(self, store: VaultStore, calls: StoreCalls | None = None) -> None:
        self._store = store
        self._calls = calls or StoreCalls(store)

    async def get_vault(self, vault_id: str) -> Vault | None:
        """The stored record of one vault, or None."""
        return await self._calls(self._store.get_vault, vault_id)
