"""Seeding: state that follows the write store, fixture balances, ENS names, idempotence."""

from __future__ import annotations

import asyncio
from decimal import ROUND_FLOOR, Decimal

import pytest

from albert.tools.addresses import to_checksum_address
from data_server.localchain.seed import (
    FixtureHolding,
    FixtureNative,
    FixtureWallet,
    SeedError,
    WalletFixture,
    load_artifacts,
    plan_chain,
    seed_chains,
)
from data_server.store import VaultStore
from data_server.vaults.model import Vault
from data_server.wallets.ens import ENS_REGISTRY, namehash
from data_server.wallets.tokens import DEFAULT_TOKENS
from tests.localchain_fixture import LocalChains, rpc, rpc_answer

# Selectors written out here, independently of the project's ABI module.
BALANCE_OF = "70a08231"
TOTAL_SUPPLY = "18160ddd"
TOTAL_ASSETS = "01e1d114"
CONVERT_TO_ASSETS = "07a2d13a"
ASSET = "38d52e0f"
RESOLVER = "0178b8bf"
ADDR = "3b3b57de"


def word(value: int | str) -> str:
    if isinstance(value, str):
        return value.lower().removeprefix("0x").rjust(64, "0")
    return format(value, "064x")


def call(url: str, to: str, data: str) -> int:
    return int(str(rpc(url, "eth_call", [{"to": to, "data": "0x" + data}, "latest"])), 16)


def call_fails(url: str, to: str, data: str) -> bool:
    return "error" in rpc_answer(url, "eth_call", [{"to": to, "data": "0x" + data}, "latest"])


def test_every_chain_was_seeded_with_its_contracts(local_chains: LocalChains) -> None:
    by_chain = {r.chain: r for r in local_chains.reports}
    assert set(by_chain) == {"ethereum", "base"}
    assert not any(r.skipped for r in by_chain.values())
    assert by_chain["ethereum"].ens_names == 5 and by_chain["base"].ens_names == 0
    assert by_chain["ethereum"].vaults == 6 and by_chain["base"].vaults == 3
    assert all(not r.warnings for r in by_chain.values())
    assert "chain ethereum (id 1) on http://127.0.0.1:" in by_chain["ethereum"].line()


def test_erc4626_vaults_price_shares_at_the_recorded_price(local_chains: LocalChains) -> None:
    holdings: dict[str, list[Decimal]] = {}
    for wallet in local_chains.fixture.wallets:
        for h in wallet.vaults:
            holdings.setdefault(h.vault_id, []).append(h.shares)
    with VaultStore(local_chains.store_path) as store:
        records = {v.id: v for v in store.get_vaults(list(holdings))}
    checked = 0
    for vault_id, shares in holdings.items():
        vault = records[vault_id]
        url = local_chains.urls[vault.chain]
        address = to_checksum_address(vault.address or "")
        token = next(
            t
            for t in DEFAULT_TOKENS
            if t.chain == vault.chain and t.address.lower() == vault.underlying_tokens[0]
        )
        supply = call(url, address, TOTAL_SUPPLY)
        assert supply == sum(int(s * 10**token.decimals) for s in shares)
        if vault.share_price is None:
            # No recorded price per share: a plain share token, no ERC-4626 conversion.
            assert call_fails(url, address, CONVERT_TO_ASSETS + word(10**token.decimals))
            continue
        assets = call(url, address, TOTAL_ASSETS)
        expected = (Decimal(supply) * Decimal(repr(vault.share_price))).to_integral_value(
            ROUND_FLOOR
        )
        assert assets == int(expected)
        assert call(url, address, ASSET) == int(token.address, 16)
        # The vault really holds its assets in the token contract.
        assert call(url, token.address, BALANCE_OF + word(address)) == assets
        one = call(url, address, CONVERT_TO_ASSETS + word(10**token.decimals))
        assert one / 10**token.decimals == pytest.approx(vault.share_price, rel=1e-6)
        checked += 1
    assert checked >= 6


def test_fixture_wallets_hold_their_token_balances(local_chains: LocalChains) -> None:
    for wallet in local_chains.fixture.wallets:
        for balance in wallet.tokens:
            token = next(
                t for t in DEFAULT_TOKENS if t.chain == balance.chain and t.symbol == balance.symbol
            )
            raw = call(
                local_chains.urls[balance.chain], token.address, BALANCE_OF + word(wallet.address)
            )
            assert raw == int(balance.amount * 10**token.decimals), (wallet.label, token.symbol)


def test_fixture_wallets_hold_their_native_balances(local_chains: LocalChains) -> None:
    held = 0
    for wallet in local_chains.fixture.wallets:
        for chain, url in local_chains.urls.items():
            wei = int(str(rpc(url, "eth_getBalance", [wallet.address, "latest"])), 16)
            amounts = [n.amount for n in wallet.native if n.chain == chain]
            # Exact to the wei (Decimal, no float); a wallet the file gives none holds none.
            assert wei == (int(amounts[0] * 10**18) if amounts else 0), (wallet.label, chain)
            held += bool(amounts)
    assert held == 3


def test_ens_names_resolve_through_registry_and_resolver(local_chains: LocalChains) -> None:
    url = local_chains.urls["ethereum"]
    for wallet in local_chains.fixture.wallets:
        for name in wallet.ens:
            node = namehash(name).hex()
            resolver = call(url, ENS_REGISTRY, RESOLVER + node)
            assert resolver != 0
            assert call(url, "0x" + format(resolver, "040x"), ADDR + node) == int(
                wallet.address, 16
            )
    # Registered without an address: a resolver, but addr() is zero.
    node = namehash("no-address.albert.eth").hex()
    resolver = call(url, ENS_REGISTRY, RESOLVER + node)
    assert resolver != 0 and call(url, "0x" + format(resolver, "040x"), ADDR + node) == 0
    assert call(url, ENS_REGISTRY, RESOLVER + namehash("unknown-name.eth").hex()) == 0
    # Base has no ENS registry.
    assert rpc(local_chains.urls["base"], "eth_getCode", [ENS_REGISTRY, "latest"]) == "0x"


def test_namehash_matches_the_eip_137_examples() -> None:
    assert namehash("") == bytes(32)
    assert (
        namehash("eth").hex() == "93cdeb708b7545dc668eb9280176169d1c33cfd8ed6f04690a0bcc88a93fc4ae"
    )
    assert (
        namehash("foo.eth").hex()
        == "de9b09fd7c5f901e23a3f19fecc54828e9c848539801e86591bd9801b019f84f"
    )


def test_seeding_again_changes_nothing(local_chains: LocalChains) -> None:
    wallet = local_chains.fixture.wallets[0]
    usdc = next(t for t in DEFAULT_TOKENS if t.chain == "ethereum" and t.symbol == "USDC")
    url = local_chains.urls["ethereum"]
    before = call(url, usdc.address, BALANCE_OF + word(wallet.address))
    block = rpc(url, "eth_blockNumber", [])

    async def again() -> list:
        with VaultStore(local_chains.store_path) as store:
            return await seed_chains(local_chains.urls, store, progress=lines.append)

    lines: list[str] = []
    reports = asyncio.run(again())
    assert all(r.skipped for r in reports)
    assert all(line.endswith("already seeded") for line in lines)
    assert rpc(url, "eth_blockNumber", []) == block
    assert call(url, usdc.address, BALANCE_OF + word(wallet.address)) == before


def test_a_plan_follows_the_store_and_says_what_it_could_not_seed() -> None:
    usdc = next(t for t in DEFAULT_TOKENS if t.chain == "ethereum" and t.symbol == "USDC")
    base_vault = Vault(
        id="test:ethereum:v",
        source="yearn",
        name="Test vault",
        protocol="yearn-finance",
        chain="ethereum",
        address="0x" + "12" * 20,
        underlying_tokens=[usdc.address.lower()],
        share_price=1.25,
        updated_at=0,
    )
    exotic = base_vault.model_copy(
        update={
            "id": "test:ethereum:x",
            "address": "0x" + "34" * 20,
            "underlying_tokens": ["0x" + "56" * 20],
        }
    )
    holder = "0x" + "ab" * 20
    fixture = WalletFixture(
        wallets=[
            FixtureWallet(
                label="w",
                address=holder,
                vaults=[
                    FixtureHolding(vault_id="test:ethereum:v", shares=Decimal("10")),
                    FixtureHolding(vault_id="test:ethereum:x", shares=Decimal("1")),
                    FixtureHolding(vault_id="test:ethereum:missing", shares=Decimal("1")),
                ],
            )
        ]
    )
    vaults = {v.id: v for v in (base_vault, exotic)}
    plan = plan_chain("ethereum", fixture, vaults, artifacts=load_artifacts(), with_ens=False)
    (seeded,) = plan.vaults
    assert seeded.kind == "erc4626" and seeded.total_shares == 10 * 10**6
    assert seeded.total_assets == 12_500_000
    assert any("test:ethereum:x" in w and "not a listed token" in w for w in plan.warnings)
    assert any(
        "test:ethereum:missing" in w and "not in the write store" in w for w in plan.warnings
    )
    # A different recorded price is a different plan, so a re-seed would apply it.
    repriced = {**vaults, "test:ethereum:v": base_vault.model_copy(update={"share_price": 1.3})}
    other = plan_chain("ethereum", fixture, repriced, artifacts=load_artifacts(), with_ens=False)
    assert other.digest() != plan.digest()
    assert (
        plan_chain("ethereum", fixture, vaults, artifacts=load_artifacts(), with_ens=False).digest()
        == plan.digest()
    )
    # The wallet holds no ETH: its balance is still set, to zero, and a native balance is
    # part of the digest too.
    assert plan.balances == {to_checksum_address(holder): 0}
    wallet = fixture.wallets[0]
    rich = WalletFixture(
        wallets=[
            wallet.model_copy(
                update={"native": [FixtureNative(chain="ethereum", amount=Decimal("0.5"))]}
            )
        ]
    )
    funded = plan_chain("ethereum", rich, vaults, artifacts=load_artifacts(), with_ens=False)
    assert funded.balances == {to_checksum_address(holder): 5 * 10**17}
    assert funded.digest() != plan.digest()


def test_a_native_balance_on_a_chain_without_a_known_native_asset_is_refused() -> None:
    wallet = FixtureWallet(
        label="w",
        address="0x" + "ab" * 20,
        native=[FixtureNative(chain="devnet", amount=Decimal("1"))],
    )
    with pytest.raises(SeedError, match="no native asset known for devnet"):
        plan_chain(
            "devnet",
            WalletFixture(wallets=[wallet]),
            {},
            chain_id=31337,
            artifacts=load_artifacts(),
        )
