"""Read a wallet's token balances and vault positions on chain.

Per chain, two Multicall3 rounds: first `balanceOf(wallet)` on every listed token and every
known vault contract, then, for the vaults actually held, `decimals()`, `totalSupply()` and
ERC-4626 `convertToAssets(shares)`. Each inner call may fail on its own (a vault that is not
ERC-4626 reverts on convertToAssets), which only leaves that figure unknown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from data_server.vaults.model import Vault
from data_server.wallets.abi import (
    AbiError,
    Call3,
    Call3Result,
    call_balance_of,
    call_convert_to_assets,
    call_decimals,
    call_total_supply,
    decode_uint,
)
from data_server.wallets.address import validate_address
from data_server.wallets.rpc import JsonRpcClient, RpcError
from data_server.wallets.tokens import DEFAULT_TOKENS, TokenInfo


class VaultCatalog(Protocol):
    """Where the known vault contracts of a chain come from (the write store or the index)."""

    async def vaults_with_addresses(self, chain: str) -> list[Vault]:
        """Every known vault on `chain` whose contract address is known."""
        ...


class Position(BaseModel):
    """One non-zero holding of a wallet."""

    chain: str
    kind: Literal["token", "vault"]
    contract: str = Field(description="Token or vault contract address")
    symbol: str
    name: str
    balance_raw: str = Field(description="Raw integer balance, as a decimal string")
    decimals: int | None
    balance: float | None = Field(description="Balance in whole units (None if decimals unknown)")
    underlying_amount: float | None = Field(
        None, description="Vault only: convertToAssets(shares) in whole asset units"
    )
    value_usd: float | None = Field(None, description="Estimated USD value when it can be known")
    vault_id: str | None = None
    protocol: str | None = None
    apy: float | None = Field(None, description="Vault APY in percent")
    risk_rating: str | None = None
    security_score: float | None = None


class ChainReadError(BaseModel):
    """A chain that could not be read, and why."""

    chain: str
    error: str


class WalletReadout(BaseModel):
    """Everything read for one address."""

    address: str
    chains_read: list[str]
    chain_errors: list[ChainReadError] = Field(default_factory=list)
    positions: list[Position]


def _uint(result: Call3Result) -> int | None:
    if not result.success:
        return None
    try:
        return decode_uint(result.return_data)
    except AbiError:
        return None


def _units(raw: int, decimals: int | None) -> float | None:
    return None if decimals is None else raw / 10**decimals


class WalletReader:
    """Reads positions over JSON-RPC for the chains that have an RPC URL."""

    def __init__(
        self,
        clients: dict[str, JsonRpcClient],
        catalog: VaultCatalog,
        *,
        tokens: Sequence[TokenInfo] = DEFAULT_TOKENS,
        batch_size: int = 200,
    ) -> None:
        self._clients = clients
        self._catalog = catalog
        self._tokens = tokens
        self._batch_size = batch_size

    @property
    def chains(self) -> list[str]:
        """Chains this reader can query."""
        return sorted(self._clients)

    async def read(self, address: str, chains: Sequence[str] | None = None) -> WalletReadout:
        """Validate the address and read every requested chain concurrently."""
        owner = validate_address(address)
        wanted = self.chains if not chains else [c for c in chains if c in self._clients]
        outcomes = await asyncio.gather(
            *(self._read_chain(owner, chain) for chain in wanted), return_exceptions=True
        )
        positions: list[Position] = []
        errors: list[ChainReadError] = []
        read: list[str] = []
        for chain, outcome in zip(wanted, outcomes, strict=True):
            if isinstance(outcome, RpcError):
                errors.append(ChainReadError(chain=chain, error=str(outcome)))
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                read.append(chain)
                positions.extend(outcome)
        return WalletReadout(
            address=owner, chains_read=read, chain_errors=errors, positions=positions
        )

    async def _read_chain(self, owner: str, chain: str) -> list[Position]:
        client = self._clients[chain]
        tokens = [t for t in self._tokens if t.chain == chain]
        vaults = [v for v in await self._catalog.vaults_with_addresses(chain) if v.address]
        balance_call = call_balance_of(owner)
        first = [Call3(t.address, balance_call) for t in tokens]
        first += [Call3(v.address or "", balance_call) for v in vaults]
        results = await client.aggregate3(first, batch_size=self._batch_size) if first else []

        positions: list[Position] = []
        for token, result in zip(tokens, results[: len(tokens)], strict=True):
            raw = _uint(result)
            if not raw:
                continue
            amount = raw / 10**token.decimals
            positions.append(
                Position(
                    chain=chain,
                    kind="token",
                    contract=token.address,
                    symbol=token.symbol,
                    name=token.name,
                    balance_raw=str(raw),
                    decimals=token.decimals,
                    balance=amount,
                    value_usd=amount * token.usd_price if token.usd_price is not None else None,
                )
            )

        held = [
            (vault, raw)
            for vault, result in zip(vaults, results[len(tokens) :], strict=True)
            if (raw := _uint(result))
        ]
        if not held:
            return positions
        second: list[Call3] = []
        for vault, shares in held:
            target = vault.address or ""
            second += [
                Call3(target, call_decimals()),
                Call3(target, call_total_supply()),
                Call3(target, call_convert_to_assets(shares)),
            ]
        details = await client.aggregate3(second, batch_size=self._batch_size)
        for index, (vault, shares) in enumerate(held):
            decimals, supply, assets = (_uint(r) for r in details[3 * index : 3 * index + 3])
            positions.append(self._vault_position(chain, vault, shares, decimals, supply, assets))
        return positions

    @staticmethod
    def _vault_position(
        chain: str,
        vault: Vault,
        shares: int,
        decimals: int | None,
        supply: int | None,
        assets: int | None,
    ) -> Position:
        if decimals is not None and decimals > 36:
            decimals = None
        underlying = _units(assets, decimals) if assets is not None else None
        if underlying is None and vault.share_price is not None:
            balance = _units(shares, decimals)
            underlying = balance * vault.share_price if balance is not None else None
        value: float | None = None
        if supply and vault.tvl_usd is not None:
            # The wallet's share of the vault's TVL needs no token price.
            value = vault.tvl_usd * shares / supply
        elif underlying is not None and vault.stablecoin:
            value = underlying
        symbol = "/".join(vault.asset_symbols) or vault.name
        return Position(
            chain=chain,
            kind="vault",
            contract=vault.address or "",
            symbol=symbol,
            name=vault.name,
            balance_raw=str(shares),
            decimals=decimals,
            balance=_units(shares, decimals),
            underlying_amount=underlying,
            value_usd=value,
            vault_id=vault.id,
            protocol=vault.protocol,
            apy=vault.apy,
            risk_rating=vault.risk_rating,
            security_score=vault.security_score,
        )
