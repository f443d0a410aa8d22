"""wallet_positions, wallet_portfolio and wallet_top_positions: on-chain holdings of an address."""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from data_server.coaching import CoachItem
from data_server.mcp_server.chains import normalize_chain
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import StrictInput, ToolFailure, ToolOutput
from data_server.mcp_server.search import fmt_usd
from data_server.wallets.address import InvalidAddress, validate_address
from data_server.wallets.positions import ChainReadError, Position, WalletReadout

ADDRESS_DESCRIPTION = (
    "EVM wallet address: 0x followed by 40 hex digits. Mixed case must be a valid EIP-55 "
    "checksum; all-lowercase is accepted."
)


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
        if isinstance(value, list):
            return [normalize_chain(v) if isinstance(v, str) else v for v in value]
        return value


async def _read(deps: ToolDeps, params: WalletInput) -> WalletReadout:
    try:
        validate_address(params.address)
    except InvalidAddress as exc:
        raise ToolFailure(str(exc)) from exc
    if deps.wallets is None or not deps.wallets.chains:
        raise ToolFailure(
            "wallet tools are not configured on this server (no RPC node URL); set RPC_URL"
        )
    if params.chains:
        missing = [c for c in params.chains if c not in deps.wallets.chains]
        if missing:
            raise ToolFailure(
                f"no RPC node for {', '.join(missing)}; readable chains: "
                f"{', '.join(deps.wallets.chains)}"
            )
    readout = await deps.wallets.read(params.address, params.chains)
    if not readout.chains_read and readout.chain_errors:
        errors = "; ".join(f"{e.chain}: {e.error}" for e in readout.chain_errors)
        raise ToolFailure(f"could not read any chain ({errors})")
    return readout


def _by_value(positions: list[Position]) -> list[Position]:
    return sorted(positions, key=lambda p: (p.value_usd is None, -(p.value_usd or 0.0)))


def _position_line(p: Position) -> str:
    amount = "?" if p.balance is None else f"{p.balance:,.6g}"
    value = fmt_usd(p.value_usd) if p.value_usd is not None else "value unknown"
    if p.kind == "vault":
        apy = "n/a" if p.apy is None else f"{p.apy:.2f}%"
        return (
            f"- [{p.chain}] vault {p.name} ({p.protocol}): {amount} shares, {value}, APY {apy}, "
            f"risk {p.risk_rating or 'unrated'}"
        )
    return f"- [{p.chain}] {p.symbol}: {amount}, {value}"


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
    chains_read: list[str]
    chain_errors: list[ChainReadError]
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
        chains_read=readout.chains_read,
        chain_errors=readout.chain_errors,
        positions=kept,
    )
    head = f"{readout.address} on {', '.join(readout.chains_read)}: {len(kept)} positions."
    lines = [head, *(_position_line(p) for p in kept)]
    lines += [f"Could not read {e.chain}: {e.error}" for e in readout.chain_errors]
    return ToolOutput(data=data, text="\n".join(lines), coach=_coach(kept))


class Bucket(BaseModel):
    """Value held in one chain, protocol or risk rating."""

    key: str
    value_usd: float
    positions: int


class WalletPortfolio(BaseModel):
    """Totals and breakdowns of a wallet's holdings."""

    address: str
    chains_read: list[str]
    chain_errors: list[ChainReadError]
    total_value_usd: float = Field(description="Sum of the positions whose value is known")
    unpriced_positions: int = Field(description="Positions whose USD value is unknown")
    token_positions: int
    vault_positions: int
    weighted_vault_apy: float | None = Field(description="Vault APY weighted by USD value, percent")
    by_chain: list[Bucket]
    by_protocol: list[Bucket]
    by_risk_rating: list[Bucket]


def _buckets(positions: list[Position], key: str) -> list[Bucket]:
    values: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for p in positions:
        name = getattr(p, key) or ("wallet" if key == "protocol" else "unrated")
        values[name] += p.value_usd or 0.0
        counts[name] += 1
    buckets = [Bucket(key=k, value_usd=round(v, 2), positions=counts[k]) for k, v in values.items()]
    return sorted(buckets, key=lambda b: -b.value_usd)


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
        chains_read=readout.chains_read,
        chain_errors=readout.chain_errors,
        total_value_usd=round(sum(p.value_usd or 0.0 for p in priced), 2),
        unpriced_positions=len(positions) - len(priced),
        token_positions=sum(1 for p in positions if p.kind == "token"),
        vault_positions=sum(1 for p in positions if p.kind == "vault"),
        weighted_vault_apy=weighted_apy,
        by_chain=_buckets(positions, "chain"),
        by_protocol=_buckets(positions, "protocol"),
        by_risk_rating=_buckets([p for p in positions if p.kind == "vault"], "risk_rating"),
    )
    lines = [
        f"Portfolio of {readout.address}: {fmt_usd(data.total_value_usd)} across "
        f"{len(positions)} positions ({data.vault_positions} in vaults, "
        f"{data.unpriced_positions} unpriced).",
        "Weighted vault APY: " + ("n/a" if weighted_apy is None else f"{weighted_apy:.2f}%"),
        "By chain: " + ", ".join(f"{b.key} {fmt_usd(b.value_usd)}" for b in data.by_chain),
        "By protocol: " + ", ".join(f"{b.key} {fmt_usd(b.value_usd)}" for b in data.by_protocol),
    ]
    if data.by_risk_rating:
        lines.append(
            "Vaults by risk: "
            + ", ".join(f"{b.key} {fmt_usd(b.value_usd)}" for b in data.by_risk_rating)
        )
    lines += [f"Could not read {e.chain}: {e.error}" for e in readout.chain_errors]
    return ToolOutput(data=data, text="\n".join(lines), coach=_coach(positions))


class WalletTopPositionsInput(WalletInput):
    """Arguments of wallet_top_positions."""

    limit: int = Field(5, ge=1, le=25, description="How many positions to return (1–25).")
    kind: Literal["all", "vault", "token"] = Field(
        "all", description="'vault' for yield positions only, 'token' for plain balances only."
    )


class WalletTopPositionsResult(BaseModel):
    """The largest holdings by USD value."""

    address: str
    total_positions: int
    positions: list[Position]
    share_of_value_pct: list[float | None] = Field(
        description="Each returned position's share of the wallet's known value, percent"
    )


async def wallet_top_positions(
    deps: ToolDeps, params: WalletTopPositionsInput
) -> ToolOutput[WalletTopPositionsResult]:
    """The largest positions of a wallet by USD value (unpriced ones last)."""
    readout = await _read(deps, params)
    positions = [p for p in readout.positions if params.kind in ("all", p.kind)]
    total = sum(p.value_usd or 0.0 for p in readout.positions)
    top = _by_value(positions)[: params.limit]
    shares = [
        round(100.0 * p.value_usd / total, 2) if p.value_usd is not None and total else None
        for p in top
    ]
    data = WalletTopPositionsResult(
        address=readout.address,
        total_positions=len(positions),
        positions=top,
        share_of_value_pct=shares,
    )
    lines = [f"Top {len(top)} of {len(positions)} positions of {readout.address}:"]
    for p, share in zip(top, shares, strict=True):
        suffix = "" if share is None else f" ({share:.1f}% of known value)"
        lines.append(_position_line(p) + suffix)
    return ToolOutput(data=data, text="\n".join(lines), coach=_coach(top))
