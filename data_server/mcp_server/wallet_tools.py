"""wallet_positions, wallet_portfolio and wallet_top_positions: on-chain holdings of an address.

The address may be an ENS name (resolved on the Ethereum node). Every output names the
checksummed address, the block each chain was read at, per-position USD value, share of the
wallet, APY and risk rating, and what could not be read; an empty wallet is an answer, not an
error. The chain's native balance (ETH, …) is a holding of kind "native", listed and priced
like a token.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from data_server.coaching import CoachItem
from data_server.mcp_server.chains import echo, unique_chains
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import StrictInput, ToolFailure, ToolOutput
from data_server.wallets.address import InvalidAddress, validate_address
from data_server.wallets.ens import EnsError, EnsResolver, looks_like_ens_name, normalize_name
from data_server.wallets.positions import (
    ChainReadError,
    Position,
    UnreadableHolding,
    WalletReadout,
)
from data_server.wallets.rpc import RpcError
from data_server.wallets.tokens import native_asset

ADDRESS_DESCRIPTION = (
    "The wallet: an EVM address (0x followed by 40 hex digits; mixed case must be a valid "
    "EIP-55 checksum, all-lowercase is accepted) or an ENS name such as vitalik.eth, which is "
    "resolved on Ethereum."
)
ENS_CHAIN = "ethereum"


class WalletInput(StrictInput):
    """An address and, optionally, which chains to read."""

    address: str = Field(min_length=1, max_length=100, description=ADDRESS_DESCRIPTION)
    chains: list[str] | None = Field(
        None,
        max_length=10,
        description="Chains to read (lowercase slugs). Default: every chain this server has an "
        "RPC node for.",
    )

    @field_validator("chains", mode="before")
    @classmethod
    def _chains(cls, value: object) -> object:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            # Aliases of one chain ("eth", "mainnet") and repeats are one chain: read twice,
            # a wallet's value would be counted twice. (Other entries: pydantic refuses them.)
            return unique_chains(value)
        return value


async def _owner(deps: ToolDeps, value: str) -> tuple[str, str | None]:
    """(checksummed address, ENS name or None) of the wallet the caller named."""
    if not looks_like_ens_name(value):
        try:
            return validate_address(value), None
        except InvalidAddress as exc:
            raise ToolFailure(str(exc)) from exc
    try:
        name = normalize_name(value)
    except EnsError as exc:
        raise ToolFailure(str(exc)) from exc
    client = deps.wallets.client(ENS_CHAIN) if deps.wallets is not None else None
    if client is None:
        raise ToolFailure(
            f"cannot resolve the ENS name {name}: names resolve on Ethereum and this server has "
            "no Ethereum RPC node; give the 0x address instead"
        )
    try:
        return await EnsResolver(client).resolve(name), name
    except EnsError as exc:
        raise ToolFailure(str(exc)) from exc
    except RpcError as exc:
        raise ToolFailure(f"could not resolve the ENS name {name}: {exc}") from exc


async def _read(deps: ToolDeps, params: WalletInput) -> WalletReadout:
    if not looks_like_ens_name(params.address):
        await _owner(deps, params.address)  # a malformed address is refused first
    if deps.wallets is None or not deps.wallets.chains:
        raise ToolFailure(
            "wallet tools are not configured on this server (no RPC node URL); set RPC_URL"
        )
    if params.chains:
        missing = [c for c in params.chains if c not in deps.wallets.chains]
        if missing:
            raise ToolFailure(
                f"no RPC node for {', '.join(echo(c) for c in missing)}; readable chains: "
                f"{', '.join(deps.wallets.chains)}"
            )
    address, ens_name = await _owner(deps, params.address)
    readout = await deps.wallets.read(address, params.chains, ens_name=ens_name)
    if not readout.chains_read and readout.chain_errors:
        errors = "; ".join(f"{e.chain}: {e.error}" for e in readout.chain_errors)
        raise ToolFailure(f"could not read any chain ({errors})")
    return readout


def _by_value(positions: list[Position]) -> list[Position]:
    return sorted(positions, key=lambda p: (p.value_usd is None, -(p.value_usd or 0.0)))


def _usd(value: float) -> str:
    """A wallet amount in dollars and cents ($26,624.00)."""
    return f"${value:,.2f}"


def _amount(value: float | None) -> str:
    return "?" if value is None else f"{value:,.6f}".rstrip("0").rstrip(".")


def _who(readout: WalletReadout) -> str:
    return f"{readout.ens_name} ({readout.address})" if readout.ens_name else readout.address


def _blocks(readout: WalletReadout) -> str:
    return ", ".join(f"{chain} at block {n}" for chain, n in readout.blocks.items()) or "no chain"


def _position_line(p: Position) -> str:
    value = _usd(p.value_usd) if p.value_usd is not None else "value unknown"
    if p.share_of_wallet_pct is not None:
        value += f" ({p.share_of_wallet_pct:.2f}% of the wallet)"
    notes = f" — {'; '.join(p.notes)}" if p.notes else ""
    if p.kind == "vault":
        apy = "n/a" if p.apy is None else f"{p.apy:.2f}%"
        underlying = (
            "" if p.underlying_amount is None else f" = {_amount(p.underlying_amount)} {p.symbol}"
        )
        return (
            f"- [{p.chain}] vault {p.name} ({p.protocol}, {p.contract}): {_amount(p.balance)} "
            f"shares{underlying}, {value}, APY {apy}, risk {p.risk_rating or 'unrated'}{notes}"
        )
    # The native asset has no contract; its placeholder address is not shown as one.
    where = "native balance" if p.kind == "native" else p.contract
    return f"- [{p.chain}] {p.symbol} ({where}): {_amount(p.balance)}, {value}{notes}"


def _problem_lines(readout: WalletReadout) -> list[str]:
    lines = [f"Could not read {e.chain}: {e.error}" for e in readout.chain_errors]
    lines += [_unreadable_line(u) for u in readout.unreadable]
    return lines


def _unreadable_line(u: UnreadableHolding) -> str:
    return f"Could not read the holding in {u.name} ({u.chain}, {u.contract}): {u.reason}"


def _empty_line(readout: WalletReadout) -> str:
    symbols = dict.fromkeys(
        asset.symbol for chain in readout.chains_read if (asset := native_asset(chain)) is not None
    )
    native = f", no {' or '.join(symbols)}" if symbols else ""
    return (
        f"{_who(readout)} holds none of the listed tokens{native} and no position in a known "
        f"vault ({_blocks(readout)})."
    )


def _coach(positions: list[Position]) -> list[CoachItem]:
    return [
        CoachItem(
            name=p.name, apy=p.apy, risk_rating=p.risk_rating, chain=p.chain, protocol=p.protocol
        )
        for p in positions
        if p.kind == "vault"
    ]


class WalletPositionsInput(WalletInput):
    """Arguments of wallet_positions."""

    min_value_usd: float = Field(
        0, ge=0, description="Hide positions worth less than this (unpriced ones are kept)."
    )


class WalletPositionsResult(BaseModel):
    """Every non-zero holding found."""

    address: str
    ens_name: str | None
    chains_read: list[str]
    blocks: dict[str, int]
    chain_errors: list[ChainReadError]
    unreadable: list[UnreadableHolding]
    positions: list[Position]


async def wallet_positions(
    deps: ToolDeps, params: WalletPositionsInput
) -> ToolOutput[WalletPositionsResult]:
    """All token balances and vault positions of an address."""
    readout = await _read(deps, params)
    kept = [
        p
        for p in _by_value(readout.positions)
        if p.value_usd is None or p.value_usd >= params.min_value_usd
    ]
    data = WalletPositionsResult(
        address=readout.address,
        ens_name=readout.ens_name,
        chains_read=readout.chains_read,
        blocks=readout.blocks,
        chain_errors=readout.chain_errors,
        unreadable=readout.unreadable,
        positions=kept,
    )
    if not readout.positions:
        lines = [_empty_line(readout)]
    else:
        hidden = len(readout.positions) - len(kept)
        head = f"{_who(readout)}: {len(kept)} positions ({_blocks(readout)})"
        head += f", {hidden} under {_usd(params.min_value_usd)} hidden." if hidden else "."
        lines = [head, *(_position_line(p) for p in kept)]
    lines += _problem_lines(readout)
    return ToolOutput(data=data, text="\n".join(lines), coach=_coach(kept))


class Bucket(BaseModel):
    """Value held in one chain, protocol or risk rating."""

    key: str
    value_usd: float = Field(description="Known value of the bucket's priced positions")
    positions: int
    unpriced_positions: int = 0


class WalletPortfolio(BaseModel):
    """Totals and breakdowns of a wallet's holdings."""

    address: str
    ens_name: str | None
    chains_read: list[str]
    blocks: dict[str, int]
    chain_errors: list[ChainReadError]
    unreadable: list[UnreadableHolding]
    total_value_usd: float = Field(description="Sum of the positions whose value is known")
    unpriced_positions: int = Field(description="Positions whose USD value is unknown")
    token_positions: int = Field(description="ERC-20 balances")
    vault_positions: int
    native_positions: int = Field(0, description="Native balances (ETH, …), one per chain at most")
    weighted_vault_apy: float | None = Field(description="Vault APY weighted by USD value, percent")
    by_chain: list[Bucket]
    by_protocol: list[Bucket]
    by_risk_rating: list[Bucket]
    positions: list[Position]


def _buckets(positions: list[Position], key: str) -> list[Bucket]:
    values: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    unpriced: dict[str, int] = defaultdict(int)
    for p in positions:
        name = getattr(p, key) or ("wallet" if key == "protocol" else "unrated")
        values[name] += p.value_usd or 0.0
        counts[name] += 1
        unpriced[name] += p.value_usd is None
    buckets = [
        Bucket(key=k, value_usd=round(v, 2), positions=counts[k], unpriced_positions=unpriced[k])
        for k, v in values.items()
    ]
    return sorted(buckets, key=lambda b: -b.value_usd)


def _bucket_text(b: Bucket) -> str:
    if b.unpriced_positions == b.positions:
        return f"{b.key} value unknown"
    return f"{b.key} {_usd(b.value_usd)}"


async def wallet_portfolio(deps: ToolDeps, params: WalletInput) -> ToolOutput[WalletPortfolio]:
    """Summarise a wallet: total value, spread across chains, protocols and risk."""
    readout = await _read(deps, params)
    positions = readout.positions
    priced = [p for p in positions if p.value_usd is not None]
    weighted = [p for p in priced if p.kind == "vault" and p.apy is not None and p.value_usd]
    weight = sum(p.value_usd or 0.0 for p in weighted)
    weighted_apy = (
        round(sum((p.value_usd or 0.0) * (p.apy or 0.0) for p in weighted) / weight, 4)
        if weight
        else None
    )
    data = WalletPortfolio(
        address=readout.address,
        ens_name=readout.ens_name,
        chains_read=readout.chains_read,
        blocks=readout.blocks,
        chain_errors=readout.chain_errors,
        unreadable=readout.unreadable,
        total_value_usd=round(sum(p.value_usd or 0.0 for p in priced), 2),
        unpriced_positions=len(positions) - len(priced),
        token_positions=sum(1 for p in positions if p.kind == "token"),
        vault_positions=sum(1 for p in positions if p.kind == "vault"),
        native_positions=sum(1 for p in positions if p.kind == "native"),
        weighted_vault_apy=weighted_apy,
        by_chain=_buckets(positions, "chain"),
        by_protocol=_buckets(positions, "protocol"),
        by_risk_rating=_buckets([p for p in positions if p.kind == "vault"], "risk_rating"),
        positions=_by_value(positions),
    )
    if not positions:
        lines = [_empty_line(readout), "Total value: $0.00."]
        lines += _problem_lines(readout)
        return ToolOutput(data=data, text="\n".join(lines), coach=[])
    lines = [
        f"Portfolio of {_who(readout)} ({_blocks(readout)}): {_usd(data.total_value_usd)} of "
        f"known value across {len(positions)} positions ({data.vault_positions} in vaults, "
        f"{data.unpriced_positions} without a USD value).",
        "Weighted vault APY: " + ("n/a" if weighted_apy is None else f"{weighted_apy:.2f}%"),
        "By chain: " + ", ".join(_bucket_text(b) for b in data.by_chain),
        "By protocol: " + ", ".join(_bucket_text(b) for b in data.by_protocol),
    ]
    if data.by_risk_rating:
        lines.append("Vaults by risk: " + ", ".join(_bucket_text(b) for b in data.by_risk_rating))
    lines.append("Positions:")
    lines += [_position_line(p) for p in data.positions]
    lines += _problem_lines(readout)
    return ToolOutput(data=data, text="\n".join(lines), coach=_coach(positions))


class WalletTopPositionsInput(WalletInput):
    """Arguments of wallet_top_positions."""

    limit: int = Field(5, ge=1, le=25, description="How many positions to return (1–25).")
    kind: Literal["all", "vault", "token"] = Field(
        "all",
        description="'vault' for yield positions only, 'token' for plain balances only "
        "(ERC-20 tokens and the chain's native asset).",
    )


class WalletTopPositionsResult(BaseModel):
    """The largest holdings by USD value."""

    address: str
    ens_name: str | None
    blocks: dict[str, int]
    total_positions: int
    total_value_usd: float = Field(description="The wallet's known value, all positions")
    positions: list[Position]
    share_of_value_pct: list[float | None] = Field(
        description="Each returned position's share of the wallet's known value, percent"
    )
    chain_errors: list[ChainReadError]
    unreadable: list[UnreadableHolding]


async def wallet_top_positions(
    deps: ToolDeps, params: WalletTopPositionsInput
) -> ToolOutput[WalletTopPositionsResult]:
    """The largest positions of a wallet by USD value (unpriced ones last)."""
    readout = await _read(deps, params)
    # A native balance is a plain balance: 'token' keeps it.
    plain = ("token", "native")
    positions = [
        p
        for p in readout.positions
        if params.kind in ("all", p.kind) or (params.kind == "token" and p.kind in plain)
    ]
    total = sum(p.value_usd or 0.0 for p in readout.positions)
    top = _by_value(positions)[: params.limit]
    data = WalletTopPositionsResult(
        address=readout.address,
        ens_name=readout.ens_name,
        blocks=readout.blocks,
        total_positions=len(positions),
        total_value_usd=round(total, 2),
        positions=top,
        share_of_value_pct=[p.share_of_wallet_pct for p in top],
        chain_errors=readout.chain_errors,
        unreadable=readout.unreadable,
    )
    if not positions:
        lines = [_empty_line(readout)]
    else:
        kind = "" if params.kind == "all" else f" {params.kind}"
        lines = [
            f"Top {len(top)} of {len(positions)}{kind} positions of {_who(readout)} by USD value "
            f"({_blocks(readout)}; known value of the wallet {_usd(total)}):"
        ]
        lines += [_position_line(p) for p in top]
    lines += _problem_lines(readout)
    return ToolOutput(data=data, text="\n".join(lines), coach=_coach(top))
