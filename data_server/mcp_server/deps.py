"""What the tools need at run time, gathered in one object built by the app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from data_server.mcp_server.chains import ChainRegistry
from data_server.mcp_server.vault_index import VaultIndex
from data_server.vaults.model import HistoryPoint, Vault
from data_server.wallets.positions import WalletReader


class HistorySource(Protocol):
    """Daily history of vaults (the write store)."""

    async def history(self, vault_id: str, days: int) -> list[HistoryPoint]:
        """The last `days` days of one vault's points, ending at its newest, oldest first.

        The window ends at the newest point rather than now, so a source that stopped
        updating still shows its series; callers report the window's end date.
        """
        ...


class VaultRecords(Protocol):
    """Full vault records, security inputs included (the write store)."""

    async def get_vault(self, vault_id: str) -> Vault | None:
        """One stored vault, or None."""
        ...


@dataclass
class ToolDeps:
    """Search index, write-store readers and wallet reader shared by every tool."""

    index: VaultIndex
    history: HistorySource | None = None
    records: VaultRecords | None = None
    wallets: WalletReader | None = None
    chains: ChainRegistry = field(init=False)

    def __post_init__(self) -> None:
        self.chains = ChainRegistry(self.index)
