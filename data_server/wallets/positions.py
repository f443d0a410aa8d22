"""Read a wallet's token balances and vault positions on chain.

Per chain: `eth_chainId` (the node must serve the chain it is configured for) and
`eth_blockNumber` (every read of the chain is pinned to that block, so the figures are one
consistent snapshot), then two Multicall3 rounds: the chain's native balance (Multicall3's own
`getEthBalance(wallet)`, so it shares the tokens' `eth_call` and block rather than needing an
`eth_getBalance` request of its own) and `balanceOf(wallet)` on every listed token
and every known vault contract, then, for the vaults actually held, `decimals()`,
`totalSupply()` and ERC-4626 `convertToAssets(shares)`. Each inner call may fail on its own
(a vault that is not ERC-4626 reverts on convertToAssets): that leaves the figure unknown and
says so on the position, or lists the contract as unreadable; it never fails the read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from data_server.chain_slugs import unique_chains
from data_server.vaults.model import Vault
from data_server.wallets.abi import (
    MULTICALL3_ADDRESS,
    AbiError,
    Call3,
    Call3Result,
    call_balance_of,
    call_convert_to_assets,
    call_decimals,
    call_get_eth_balance,
    call_total_supply,
    decode_uint,
)
from data_server.wallets.address import validate_address
from data_server.wallets.chain_ids import chain_id as known_chain_id
from data_server.wallets.rpc import JsonRpcClient, RpcError
from data_server.wallets.tokens import DEFAULT_TOKENS, NATIVE_ASSETS, TokenInfo


class VaultCatalog(Protocol):
    """Where the known vault contracts of a chain come from (the write store or the index)."""

    async def vaults_with_addresses(self, chain: str) -> list[Vault]:
        """Every known vault on `chain` whose contract address is known."""
        ...


class Position(BaseModel):
    """One non-zero holding of a wallet."""

    chain: str
    kind: Literal["token", "vault", "native"] = Field(
        description="An ERC-20 balance, vault shares, or the chain's native asset (ETH, …)"
    )
    contract: str = Field(
        description="Token or vault contract address; for the native asset EIP-7528's "
        "placeholder 0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"
    )
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
    vault_url: str | None = Field(None, description="Vault only: the vault's page, when known")
    protocol: str | None = None
    apy: float | None = Field(None, description="Vault APY in percent")
    risk_rating: str | None = None
    security_score: float | None = None
    share_of_wallet_pct: float | None = Field(
        None, description="This position's share of the wallet's known USD value, percent"
    )
    notes: list[str] = Field(
        default_factory=list, description="What could not be read or priced for this position"
    )


_DETAIL_CALLS = ("decimals()", "totalSupply()", "convertToAssets()")


class UnreadableHolding(BaseModel):
    """A contract whose balance call failed inside the batch: the holding there is unknown."""

    chain: str
    contract: str
    name: str
    reason: str


class ChainReadError(BaseModel):
    """A chain that could not be read, and why."""

    chain: str
    error: str


class WalletReadout(BaseModel):
    """Everything read for one address."""

    address: str
    ens_name: str | None = None
    chains_read: list[str]
    blocks: dict[str, int] = Field(
        default_factory=dict, description="Block number each chain was read at"
    )
    chain_errors: list[ChainReadError] = Field(default_factory=list)
    unreadable: list[UnreadableHolding] = Field(default_factory=list)
    positions: list[Position]

    @property
    def known_value_usd(self) -> float:
        """Sum of the positions whose USD value is known."""
        return sum(p.value_usd or 0.0 for p in self.positions)


def _uint(result: Call3Result) -> int | None:
    if not result.success:
        return None
    try:
        return decode_uint(result.return_data)
    except AbiError:
        return None


def _units(raw: int, decimals: int | None) -> float | None:
    return None if decimals is None else raw / 10**decimals


def _failure(result: Call3Result, call: str) -> str | None:
    """Why a balance call tells nothing, or None if it returned a number (or no contract)."""
    if not result.success:
        return f"{call} reverted"
    if result.return_data and _uint(result) is None:
        return f"{call} returned malformed data"
    return None


def _listed_symbol(vault: Vault) -> str | None:
    wanted = {t.lower() for t in vault.underlying_tokens}
    symbols = [
        t.symbol for t in DEFAULT_TOKENS if t.chain == vault.chain and t.address.lower() in wanted
    ]
    return "/".join(symbols) or None


def _plain_position(chain: str, token: TokenInfo, raw: int, native: bool) -> Position:
    """A token balance, or the native one: same figures, same pricing rule."""
    amount = raw / 10**token.decimals
    return Position(
        chain=chain,
        kind="native" if native else "token",
        contract=token.address,
        symbol=token.symbol,
        name=token.name,
        balance_raw=str(raw),
        decimals=token.decimals,
        balance=amount,
        value_usd=amount * token.usd_price if token.usd_price is not None else None,
        notes=[]
        if token.usd_price is not None
        else [f"USD value unknown: no price for {token.symbol} in the store"],
    )


@dataclass
class _ChainRead:
    block: int
    positions: list[Position]
    unreadable: list[UnreadableHolding]


class WalletReader:
    """Reads positions over JSON-RPC for the chains that have an RPC URL."""

    def __init__(
        self,
        clients: dict[str, JsonRpcClient],
        catalog: VaultCatalog,
        *,
        tokens: Sequence[TokenInfo] = DEFAULT_TOKENS,
        natives: Mapping[str, TokenInfo] = NATIVE_ASSETS,
        batch_size: int = 200,
    ) -> None:
        self._clients = clients
        self._catalog = catalog
        self._tokens = tokens
        self._natives = natives
        self._batch_size = batch_size

    @property
    def chains(self) -> list[str]:
        """Chains this reader can query."""
        return sorted(self._clients)

    def client(self, chain: str) -> JsonRpcClient | None:
        """The RPC client of one chain, if configured."""
        return self._clients.get(chain)

    async def read(
        self, address: str, chains: Sequence[str] | None = None, *, ens_name: str | None = None
    ) -> WalletReadout:
        """Validate the address and read every requested chain concurrently."""
        owner = validate_address(address)
        # Each chain once, whatever the caller repeated or however it named it ("eth",
        # "mainnet"): a chain read twice counts twice.
        wanted = (
            self.chains if not chains else [c for c in unique_chains(chains) if c in self._clients]
        )
        outcomes = await asyncio.gather(
            *(self._read_chain(owner, chain) for chain in wanted), return_exceptions=True
        )
        positions: list[Position] = []
        unreadable: list[UnreadableHolding] = []
        errors: list[ChainReadError] = []
        read: list[str] = []
        blocks: dict[str, int] = {}
        for chain, outcome in zip(wanted, outcomes, strict=True):
            if isinstance(outcome, RpcError):
                errors.append(ChainReadError(chain=chain, error=str(outcome)))
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                read.append(chain)
                blocks[chain] = outcome.block
                positions.extend(outcome.positions)
                unreadable.extend(outcome.unreadable)
        total = sum(p.value_usd or 0.0 for p in positions)
        shared = [
            p.model_copy(
                update={
                    "share_of_wallet_pct": round(100.0 * p.value_usd / total, 2)
                    if p.value_usd is not None and total
                    else None
                }
            )
            for p in positions
        ]
        return WalletReadout(
            address=owner,
            ens_name=ens_name,
            chains_read=read,
            blocks=blocks,
            chain_errors=errors,
            unreadable=unreadable,
            positions=shared,
        )

    async def _block(self, chain: str, client: JsonRpcClient) -> int:
        expected = known_chain_id(chain)
        found = await client.chain_id()
        if expected is not None and found != expected:
            raise RpcError(
                f"the RPC node configured for {chain} serves chain id {found}, not {expected}"
            )
        return await client.block_number()

    async def _read_chain(self, owner: str, chain: str) -> _ChainRead:
        client = self._clients[chain]
        block_number = await self._block(chain, client)
        block = hex(block_number)
        native = self._natives.get(chain)
        # The native balance leads the first batch (one call, never split from the tokens'
        # block); a chain whose native asset is unknown is not asked for one.
        plain = ([native] if native is not None else []) + [
            t for t in self._tokens if t.chain == chain
        ]
        vaults = [v for v in await self._catalog.vaults_with_addresses(chain) if v.address]
        balance_call = call_balance_of(owner)
        first = [
            Call3(MULTICALL3_ADDRESS, call_get_eth_balance(owner))
            if t is native
            else Call3(t.address, balance_call)
            for t in plain
        ]
        first += [Call3(v.address or "", balance_call) for v in vaults]
        results = (
            await client.aggregate3(first, batch_size=self._batch_size, block=block)
            if first
            else []
        )

        positions: list[Position] = []
        unreadable: list[UnreadableHolding] = []
        for token, result in zip(plain, results[: len(plain)], strict=True):
            is_native = token is native
            call = "getEthBalance" if is_native else "balanceOf"
            # Multicall3 answers getEthBalance itself, so no data there is malformed, not
            # a missing contract.
            empty = f"{call}: no contract at this address" if not is_native else f"{call}: no data"
            reason = _failure(result, call) or (None if result.return_data else empty)
            if reason:
                unreadable.append(
                    UnreadableHolding(
                        chain=chain, contract=token.address, name=token.symbol, reason=reason
                    )
                )
                continue
            raw = _uint(result)
            if not raw:
                continue
            positions.append(_plain_position(chain, token, raw, is_native))

        held: list[tuple[Vault, int]] = []
        for vault, result in zip(vaults, results[len(plain) :], strict=True):
            # Empty return data is an address without code on this chain: nothing held there.
            reason = _failure(result, "balanceOf")
            if reason:
                unreadable.append(
                    UnreadableHolding(
                        chain=chain,
                        contract=validate_address(vault.address or ""),
                        name=vault.name,
                        reason=reason,
                    )
                )
            elif raw := _uint(result):
                held.append((vault, raw))
        if not held:
            return _ChainRead(block_number, positions, unreadable)
        second: list[Call3] = []
        for vault, shares in held:
            target = vault.address or ""
            second += [
                Call3(target, call_decimals()),
                Call3(target, call_total_supply()),
                Call3(target, call_convert_to_assets(shares)),
            ]
        details = await client.aggregate3(second, batch_size=self._batch_size, block=block)
        for index, (vault, shares) in enumerate(held):
            triple = details[3 * index : 3 * index + 3]
            decimals, supply, assets = (_uint(r) for r in triple)
            notes = [
                f"{call} reverted"
                for call, r in zip(_DETAIL_CALLS, triple, strict=True)
                if not r.success
            ]
            positions.append(
                self._vault_position(chain, vault, shares, decimals, supply, assets, notes)
            )
        return _ChainRead(block_number, positions, unreadable)

    @staticmethod
    def _vault_position(
        chain: str,
        vault: Vault,
        shares: int,
        decimals: int | None,
        supply: int | None,
        assets: int | None,
        notes: list[str],
    ) -> Position:
        if decimals is not None and decimals > 36:
            decimals = None
        underlying = _units(assets, decimals) if assets is not None else None
        if underlying is None and vault.share_price is not None:
            balance = _units(shares, decimals)
            underlying = balance * vault.share_price if balance is not None else None
            if underlying is not None:
                notes.append("underlying amount from the recorded price per share")
        value: float | None = None
        if supply and vault.tvl_usd is not None:
            # The wallet's share of the vault's TVL needs no token price.
            value = vault.tvl_usd * shares / supply
        elif underlying is not None and vault.stablecoin:
            value = underlying
        if underlying is None:
            notes.append("underlying amount unknown")
        if value is None:
            notes.append("USD value unknown: no TVL recorded and the asset is not a stablecoin")
        symbol = "/".join(vault.asset_symbols) or _listed_symbol(vault) or vault.name
        return Position(
            chain=chain,
            kind="vault",
            contract=validate_address(vault.address or ""),
            symbol=symbol,
            name=vault.name,
            balance_raw=str(shares),
            decimals=decimals,
            balance=_units(shares, decimals),
            underlying_amount=underlying,
            value_usd=value,
            vault_id=vault.id,
            vault_url=vault.url,
            protocol=vault.protocol,
            apy=vault.apy,
            risk_rating=vault.risk_rating,
            security_score=vault.security_score,
            notes=notes,
        )
