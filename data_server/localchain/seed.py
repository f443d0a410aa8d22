"""Seed a local chain from the write store: Multicall3, tokens, vaults, fixture wallets, ENS.

What is placed on a chain, and where the numbers come from:

- **Multicall3** at its canonical address, with its real runtime bytecode (fixture).
- **ERC-20 tokens** (`SeedToken`) at the real addresses of the listed tokens of the chain
  (`data_server.wallets.tokens`), with their real symbols and decimals.
- **Vaults** at the addresses the write store records for the vaults the fixture wallets hold.
  A vault whose record has a price per share gets an ERC-4626 contract (`SeedVault`) over its
  asset token; the shares are what the fixture wallets hold, and the vault is given
  `shares × recorded price per share` of the asset, so `convertToAssets` answers at exactly
  the recorded price. (The store holds no TVL for these vaults, so the local chain does not
  pretend the vault is bigger than its depositors here.) A vault without a recorded price
  gets a plain share token with no `convertToAssets` (as Beefy's share tokens): the wallet
  tools then show its shares with the underlying amount unknown, as they would on mainnet.
- **Fixture wallets** (`fixtures/wallets.json`): native balances (ETH; set with
  `anvil_setBalance`, and set to zero for a wallet the file gives none on the chain), token
  balances and vault shares.
- **ENS** (Ethereum only): a registry at the canonical address and a resolver, with the
  fixture names pointing at the wallets.

Seeding is idempotent: every write sets a value (never adds), and a digest of the whole plan
is stored on the chain, so a second run over the same store finds it and does nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field, field_validator

from albert.tools.addresses import checksum_encode, to_checksum_address
from albert.tools.keccak import keccak256
from data_server.store import VaultStore
from data_server.vaults.model import Vault
from data_server.wallets.abi import MULTICALL3_ADDRESS, encode_call
from data_server.wallets.chain_ids import chain_id as known_chain_id
from data_server.wallets.ens import ENS_REGISTRY, labelhash, namehash, normalize_name
from data_server.wallets.rpc import JsonRpcClient, RpcError
from data_server.wallets.tokens import DEFAULT_TOKENS, TokenInfo, native_asset

LOCALCHAIN_DIR = Path(__file__).parent
FIXTURES_DIR = LOCALCHAIN_DIR / "fixtures"
ARTIFACTS_FILE = LOCALCHAIN_DIR / "contracts" / "artifacts.json"
WALLETS_FILE = FIXTURES_DIR / "wallets.json"
MULTICALL3_RUNTIME_FILE = FIXTURES_DIR / "multicall3_runtime.hex"

# The contracts' SEEDER constant; nobody holds its key, the node lets the seeding act as it.
SEEDER = "0x1C7Bb1e1b221e15065f54E80b1052FEbdb086892"
# Where the local ENS resolver lives (keccak256("albert local ens resolver")[12:]).
ENS_RESOLVER = checksum_encode(keccak256(b"albert local ens resolver")[12:].hex())
# The plan's digest is kept in this storage slot of the seeder account.
DIGEST_SLOT = "0x" + "00" * 32
SEED_GAS = 1_000_000
RECEIPT_WAIT_SECONDS = 10.0

Progress = Callable[[str], None]


def _selector(signature: str) -> bytes:
    return keccak256(signature.encode())[:4]


SEED_METADATA = _selector("seedMetadata(string,string,uint8)")
SEED_BALANCE = _selector("seedBalance(address,uint256)")
SEED_VAULT = _selector("seedVault(address,string,string,uint8)")
SET_SUBNODE_RECORD = _selector("setSubnodeRecord(bytes32,bytes32,address,address,uint64)")
SET_ADDR = _selector("setAddr(bytes32,address)")


class SeedError(RuntimeError):
    """The fixture does not fit the store, or the node refused a seeding step."""


# --- the fixture ----------------------------------------------------------------------------


class FixtureToken(BaseModel):
    """A plain token balance of a fixture wallet."""

    chain: str
    symbol: str
    amount: Decimal = Field(gt=0)


class FixtureNative(BaseModel):
    """A fixture wallet's balance of its chain's native asset (ETH), in whole units."""

    chain: str
    amount: Decimal = Field(gt=0)


class FixtureHolding(BaseModel):
    """Vault shares held by a fixture wallet, the vault named by its write-store id."""

    vault_id: str
    shares: Decimal = Field(gt=0)


class FixtureWallet(BaseModel):
    """One wallet of the local chain."""

    label: str
    address: str
    ens: list[str] = Field(default_factory=list)
    native: list[FixtureNative] = Field(default_factory=list)
    tokens: list[FixtureToken] = Field(default_factory=list)
    vaults: list[FixtureHolding] = Field(default_factory=list)

    @field_validator("address")
    @classmethod
    def _checksummed(cls, value: str) -> str:
        return to_checksum_address(value)


class WalletFixture(BaseModel):
    """Every fixture wallet, and ENS names registered without an address."""

    wallets: list[FixtureWallet]
    ens_without_address: list[str] = Field(default_factory=list)

    def vault_ids(self) -> list[str]:
        """Every vault id a wallet holds, in first-seen order."""
        seen: dict[str, None] = {}
        for wallet in self.wallets:
            for holding in wallet.vaults:
                seen.setdefault(holding.vault_id, None)
        return list(seen)


def load_fixture(path: Path = WALLETS_FILE) -> WalletFixture:
    """The fixture wallets file."""
    return WalletFixture.model_validate_json(path.read_text())


def load_artifacts(path: Path = ARTIFACTS_FILE) -> dict[str, str]:
    """Contract name → runtime bytecode (0x hex) of the committed artifacts."""
    doc = json.loads(path.read_text())
    return {name: c["runtime_bytecode"] for name, c in doc["contracts"].items()}


def multicall3_runtime() -> str:
    """Multicall3's recorded runtime bytecode (0x hex)."""
    return MULTICALL3_RUNTIME_FILE.read_text().strip()


# --- the plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedCall:
    """One transaction the seeder sends."""

    to: str
    data: bytes
    what: str


@dataclass(frozen=True)
class SeededVault:
    """A vault as placed on the chain, with the figures it was given."""

    vault_id: str
    address: str
    kind: str  # "erc4626" or "shares"
    asset: str
    asset_symbol: str
    decimals: int
    total_shares: int
    total_assets: int | None
    share_price: float | None


@dataclass
class ChainPlan:
    """Everything one chain gets: code at addresses, then transactions in order."""

    chain: str
    chain_id: int
    code: dict[str, str] = field(default_factory=dict)
    balances: dict[str, int] = field(default_factory=dict)
    calls: list[SeedCall] = field(default_factory=list)
    vaults: list[SeededVault] = field(default_factory=list)
    ens_names: dict[str, str | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def digest(self) -> str:
        """SHA-256 of the whole plan (a fingerprint): equal digests mean equal chain state."""
        doc = {
            "chain_id": self.chain_id,
            "code": sorted((a.lower(), c.lower()) for a, c in self.code.items()),
            "balances": sorted((a.lower(), wei) for a, wei in self.balances.items()),
            "calls": [(c.to.lower(), c.data.hex()) for c in self.calls],
        }
        return "0x" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _units(amount: Decimal, decimals: int, what: str) -> int:
    raw = amount * (Decimal(10) ** decimals)
    if raw != raw.to_integral_value():
        raise SeedError(f"{what}: {amount} has more than {decimals} decimals")
    return int(raw)


def _token_by_symbol(chain: str, symbol: str, tokens: Iterable[TokenInfo]) -> TokenInfo:
    for token in tokens:
        if token.chain == chain and token.symbol.upper() == symbol.upper():
            return token
    raise SeedError(f"no listed token {symbol} on {chain}")


def _asset_of(vault: Vault, tokens: Iterable[TokenInfo]) -> TokenInfo | None:
    if len(vault.underlying_tokens) != 1:
        return None
    wanted = vault.underlying_tokens[0].lower()
    return next((t for t in tokens if t.chain == vault.chain and t.address.lower() == wanted), None)


def plan_chain(
    chain: str,
    fixture: WalletFixture,
    vaults: dict[str, Vault],
    *,
    chain_id: int | None = None,
    tokens: tuple[TokenInfo, ...] = DEFAULT_TOKENS,
    artifacts: dict[str, str] | None = None,
    with_ens: bool | None = None,
) -> ChainPlan:
    """What `chain` gets from the fixture and the stored vault records (no node involved)."""
    resolved_id = chain_id if chain_id is not None else known_chain_id(chain)
    if resolved_id is None:
        raise SeedError(f"no chain id known for {chain!r}")
    code_of = artifacts or load_artifacts()
    plan = ChainPlan(chain=chain, chain_id=resolved_id)
    plan.code[MULTICALL3_ADDRESS] = multicall3_runtime()
    listed = [t for t in tokens if t.chain == chain]
    for token in listed:
        plan.code[token.address] = code_of["SeedToken"]
        plan.calls.append(
            SeedCall(
                token.address,
                encode_call(
                    SEED_METADATA,
                    [("string", token.name), ("string", token.symbol), ("uint8", token.decimals)],
                ),
                f"{token.symbol} metadata",
            )
        )

    # Vault shares per holder, then each vault's contract and asset backing.
    holdings: dict[str, list[tuple[str, Decimal]]] = {}
    for wallet in fixture.wallets:
        for holding in wallet.vaults:
            holdings.setdefault(holding.vault_id, []).append((wallet.address, holding.shares))
    for vault_id in fixture.vault_ids():
        vault = vaults.get(vault_id)
        if vault is None:
            plan.warnings.append(f"{vault_id}: not in the write store, not seeded")
            continue
        if vault.chain != chain:
            continue
        if not vault.address:
            plan.warnings.append(f"{vault_id}: no contract address recorded, not seeded")
            continue
        asset = _asset_of(vault, listed)
        if asset is None:
            plan.warnings.append(f"{vault_id}: its asset is not a listed token, not seeded")
            continue
        address = to_checksum_address(vault.address)
        shares = {
            holder: _units(amount, asset.decimals, f"{vault_id} shares of {holder}")
            for holder, amount in holdings[vault_id]
        }
        total_shares = sum(shares.values())
        symbol = f"yv{asset.symbol}" if vault.source == "yearn" else f"{asset.symbol}-shares"
        if vault.share_price is not None and vault.share_price > 0:
            price = Decimal(repr(vault.share_price))
            total_assets = int((Decimal(total_shares) * price).to_integral_value(ROUND_FLOOR))
            plan.code[address] = code_of["SeedVault"]
            plan.calls.append(
                SeedCall(
                    address,
                    encode_call(
                        SEED_VAULT,
                        [
                            ("address", asset.address),
                            ("string", vault.name),
                            ("string", symbol),
                            ("uint8", asset.decimals),
                        ],
                    ),
                    f"vault {vault.name}",
                )
            )
            plan.calls.append(
                SeedCall(
                    asset.address,
                    encode_call(SEED_BALANCE, [("address", address), ("uint256", total_assets)]),
                    f"{asset.symbol} backing of {vault.name}",
                )
            )
            kind = "erc4626"
        else:
            total_assets = None
            plan.code[address] = code_of["SeedToken"]
            plan.calls.append(
                SeedCall(
                    address,
                    encode_call(
                        SEED_METADATA,
                        [("string", vault.name), ("string", symbol), ("uint8", asset.decimals)],
                    ),
                    f"share token {vault.name}",
                )
            )
            kind = "shares"
        for holder, raw in shares.items():
            plan.calls.append(
                SeedCall(
                    address,
                    encode_call(SEED_BALANCE, [("address", holder), ("uint256", raw)]),
                    f"{vault.name} shares of {holder}",
                )
            )
        plan.vaults.append(
            SeededVault(
                vault_id=vault_id,
                address=address,
                kind=kind,
                asset=asset.address,
                asset_symbol=asset.symbol,
                decimals=asset.decimals,
                total_shares=total_shares,
                total_assets=total_assets,
                share_price=vault.share_price,
            )
        )

    native = native_asset(chain)
    for wallet in fixture.wallets:
        # Every fixture wallet's native balance is set, zero included, so the chain holds
        # exactly the file's figures whatever an earlier plan gave it.
        amounts = [n.amount for n in wallet.native if n.chain == chain]
        if len(amounts) > 1:
            raise SeedError(f"{wallet.label}: more than one native balance on {chain}")
        if amounts and native is None:
            raise SeedError(f"{wallet.label}: no native asset known for {chain}")
        plan.balances[wallet.address] = (
            _units(amounts[0], native.decimals, f"{native.symbol} of {wallet.label}")
            if amounts and native is not None
            else 0
        )
        for balance in wallet.tokens:
            if balance.chain != chain:
                continue
            token = _token_by_symbol(chain, balance.symbol, listed)
            raw = _units(balance.amount, token.decimals, f"{token.symbol} of {wallet.label}")
            plan.calls.append(
                SeedCall(
                    token.address,
                    encode_call(SEED_BALANCE, [("address", wallet.address), ("uint256", raw)]),
                    f"{token.symbol} of {wallet.label}",
                )
            )

    if with_ens if with_ens is not None else chain == "ethereum":
        _plan_ens(plan, fixture, code_of)
    return plan


def _plan_ens(plan: ChainPlan, fixture: WalletFixture, code_of: dict[str, str]) -> None:
    plan.code[ENS_REGISTRY] = code_of["EnsRegistry"]
    plan.code[ENS_RESOLVER] = code_of["EnsResolver"]
    names: dict[str, str | None] = {}
    for wallet in fixture.wallets:
        for name in wallet.ens:
            names[normalize_name(name)] = wallet.address
    for name in fixture.ens_without_address:
        names.setdefault(normalize_name(name), None)
    created: set[str] = set()
    for name, address in names.items():
        labels = name.split(".")
        # Parents first (eth, then albert.eth, …), owned by the seeder, without a resolver.
        for depth in range(len(labels) - 1, -1, -1):
            node_name = ".".join(labels[depth:])
            if node_name in created:
                continue
            created.add(node_name)
            parent = ".".join(labels[depth + 1 :])
            resolver = ENS_RESOLVER if depth == 0 else "0x" + "00" * 20
            plan.calls.append(
                SeedCall(
                    ENS_REGISTRY,
                    encode_call(
                        SET_SUBNODE_RECORD,
                        [
                            ("bytes32", namehash(parent)),
                            ("bytes32", labelhash(labels[depth])),
                            ("address", SEEDER),
                            ("address", resolver),
                            ("uint64", 0),
                        ],
                    ),
                    f"ENS {node_name}",
                )
            )
        if address is not None:
            plan.calls.append(
                SeedCall(
                    ENS_RESOLVER,
                    encode_call(SET_ADDR, [("bytes32", namehash(name)), ("address", address)]),
                    f"ENS {name} → {address}",
                )
            )
    plan.ens_names = names


# --- applying a plan ------------------------------------------------------------------------


class SeedReport(BaseModel):
    """What seeding one chain did."""

    chain: str
    chain_id: int
    url: str
    skipped: bool = Field(description="The chain already held this exact plan")
    contracts: int
    transactions: int
    vaults: int
    wallets: int
    ens_names: int
    warnings: list[str] = Field(default_factory=list)
    seconds: float

    def line(self) -> str:
        """The progress line of this chain."""
        if self.skipped:
            return f"  chain {self.chain} (id {self.chain_id}) on {self.url}: already seeded"
        ens = f", {self.ens_names} ENS names" if self.ens_names else ""
        return (
            f"  chain {self.chain} (id {self.chain_id}) on {self.url}: {self.contracts} "
            f"contracts, {self.vaults} vaults, {self.wallets} wallets{ens}, "
            f"{self.transactions} transactions in {self.seconds:.2f} s"
        )


async def apply_plan(client: JsonRpcClient, plan: ChainPlan, fixture: WalletFixture) -> SeedReport:
    """Bring the node to the plan's state; a no-op when it already holds this plan."""
    started = time.monotonic()
    found_id = await client.chain_id()
    if found_id != plan.chain_id:
        raise SeedError(
            f"node at {client.url} has chain id {found_id}, {plan.chain} is {plan.chain_id}"
        )
    digest = plan.digest()
    wallets = sum(1 for w in fixture.wallets if _wallet_on(w, plan.chain))
    report = dict(
        chain=plan.chain,
        chain_id=plan.chain_id,
        url=client.url,
        contracts=len(plan.code),
        transactions=len(plan.calls),
        vaults=len(plan.vaults),
        wallets=wallets,
        ens_names=len(plan.ens_names),
        warnings=plan.warnings,
    )
    stored = await client.request("eth_getStorageAt", [SEEDER, DIGEST_SLOT, "latest"])
    if isinstance(stored, str) and int(stored, 16) == int(digest, 16):
        return SeedReport(skipped=True, seconds=time.monotonic() - started, **report)

    await client.batch(
        [("anvil_setCode", [address, code]) for address, code in plan.code.items()]
        + [("anvil_setBalance", [address, hex(wei)]) for address, wei in plan.balances.items()]
        + [
            ("anvil_impersonateAccount", [SEEDER]),
            ("anvil_setBalance", [SEEDER, hex(10**21)]),
        ]
    )
    nonce = int(await client.request("eth_getTransactionCount", [SEEDER, "latest"]), 16)
    hashes = await client.batch(
        [
            (
                "eth_sendTransaction",
                [
                    {
                        "from": SEEDER,
                        "to": call.to,
                        "data": "0x" + call.data.hex(),
                        "gas": hex(SEED_GAS),
                        "nonce": hex(nonce + i),
                    }
                ],
            )
            for i, call in enumerate(plan.calls)
        ]
    )
    await _check_receipts(client, plan.calls, hashes)
    await client.batch(
        [
            ("anvil_stopImpersonatingAccount", [SEEDER]),
            ("anvil_setStorageAt", [SEEDER, DIGEST_SLOT, digest]),
        ]
    )
    return SeedReport(skipped=False, seconds=time.monotonic() - started, **report)


def _wallet_on(wallet: FixtureWallet, chain: str) -> bool:
    if any(n.chain == chain for n in wallet.native):
        return True
    return any(t.chain == chain for t in wallet.tokens) or any(
        h.vault_id.split(":")[1:2] == [chain] for h in wallet.vaults
    )


async def _check_receipts(client: JsonRpcClient, calls: list[SeedCall], hashes: list[Any]) -> None:
    deadline = time.monotonic() + RECEIPT_WAIT_SECONDS
    pending = list(zip(calls, hashes, strict=True))
    while pending:
        receipts = await client.batch(
            [("eth_getTransactionReceipt", [tx_hash]) for _, tx_hash in pending]
        )
        still: list[tuple[SeedCall, Any]] = []
        for (call, tx_hash), receipt in zip(pending, receipts, strict=True):
            if receipt is None:
                still.append((call, tx_hash))
            elif int(receipt.get("status", "0x0"), 16) != 1:
                raise SeedError(f"seeding transaction reverted: {call.what} ({tx_hash})")
        pending = still
        if pending:
            if time.monotonic() > deadline:
                raise SeedError(f"{len(pending)} seeding transactions were never mined")
            await asyncio.sleep(0.05)


async def seed_chains(
    urls: dict[str, str],
    store: VaultStore,
    *,
    fixture: WalletFixture | None = None,
    progress: Progress | None = None,
    http: httpx.AsyncClient | None = None,
) -> list[SeedReport]:
    """Seed every chain in `urls` (chain slug → node URL) from the store; one line per chain."""
    wallets = fixture or load_fixture()
    artifacts = load_artifacts()
    records = {v.id: v for v in await asyncio.to_thread(store.get_vaults, wallets.vault_ids())}
    owns_http = http is None
    client_http = http or httpx.AsyncClient(timeout=30.0)
    reports: list[SeedReport] = []
    try:
        for chain, url in urls.items():
            started = time.monotonic()
            plan = plan_chain(chain, wallets, records, artifacts=artifacts)
            try:
                report = await apply_plan(
                    JsonRpcClient(url, client_http, timeout=30.0), plan, wallets
                )
            except RpcError as exc:
                raise SeedError(f"seeding {chain} at {url} failed: {exc}") from exc
            # Planning (namehashes, calldata) counts too: the line is the chain's whole cost.
            report = report.model_copy(update={"seconds": time.monotonic() - started})
            reports.append(report)
            if progress is not None:
                progress(report.line())
                for warning in report.warnings:
                    progress(f"    warning: {warning}")
    finally:
        if owns_http:
            await client_http.aclose()
    return reports
