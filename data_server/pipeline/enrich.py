"""Cross-source enrichment: fill missing asset symbols from what other sources know.

Yearn's metadata store names a vault's underlying token only by address. Beefy and
DefiLlama vaults that hold exactly one token name it, so a (chain, token address) →
symbols registry built from them fills the gap. The registry also reads the store, so a
source that failed this run still lends its knowledge and the result does not flip-flop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple, Protocol

from data_server.processors.base import is_stable_set
from data_server.vaults.model import Vault

TokenKey = tuple[str, str]


class Naming(Protocol):
    """What enrichment reads of a vault: its chain, its tokens and their symbols."""

    @property
    def chain(self) -> str: ...
    @property
    def underlying_tokens(self) -> list[str]: ...
    @property
    def asset_symbols(self) -> list[str]: ...


class StoredNaming(NamedTuple):
    """The naming of a stored vault, read without validating the whole record."""

    chain: str
    underlying_tokens: list[str]
    asset_symbols: list[str]


def symbol_registry(vaults: Iterable[Naming]) -> dict[TokenKey, list[str]]:
    """(chain, token address) → asset symbols, from vaults that hold exactly one token."""
    votes: dict[TokenKey, Counter[tuple[str, ...]]] = {}
    for vault in vaults:
        if len(vault.underlying_tokens) == 1 and vault.asset_symbols:
            key = (vault.chain, vault.underlying_tokens[0].lower())
            votes.setdefault(key, Counter())[tuple(vault.asset_symbols)] += 1
    # Most votes wins; ties go to the alphabetically first naming, so runs agree.
    return {
        key: list(min(counter.items(), key=lambda item: (-item[1], item[0]))[0])
        for key, counter in votes.items()
    }


def lacks_symbols(vault: Vault) -> bool:
    """True for a vault `fill_asset_symbols` may change: no symbols, a single token."""
    return not vault.asset_symbols and len(vault.underlying_tokens) == 1


def fill_asset_symbols(
    vaults: list[Vault], registry: dict[TokenKey, list[str]]
) -> tuple[list[Vault], int]:
    """Vaults with empty asset symbols filled from the registry; also how many were filled.

    A vault whose filled symbols are all USD stablecoins is marked as a stablecoin vault.
    """
    filled = 0
    out: list[Vault] = []
    for vault in vaults:
        if lacks_symbols(vault):
            symbols = registry.get((vault.chain, vault.underlying_tokens[0].lower()))
            if symbols:
                stable = vault.stablecoin or is_stable_set(symbols)
                vault = vault.model_copy(
                    update={"asset_symbols": list(symbols), "stablecoin": stable}
                )
                filled += 1
        out.append(vault)
    return out, filled
