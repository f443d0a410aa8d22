"""Yearn processor: yDaemon metadata and APY stores; fractions become percent."""

from __future__ import annotations

import httpx
import pytest

from data_server.fixtures import YEARN_CHAINS, fixture_handler, load
from data_server.processors import YearnProcessor

from .conftest import run_offline


async def test_net_apy_fraction_becomes_percent() -> None:
    result = await run_offline(YearnProcessor(chains=YEARN_CHAINS))
    apys = load("yearn/apy_1.json")["apy"]
    address, entry = next((a, e) for a, e in apys.items() if e["netAPY"] > 0.01)
    vault = next(v for v in result.vaults if v.id == f"yearn:ethereum:{address}")
    assert vault.apy == pytest.approx(entry["netAPY"] * 100)
    assert vault.share_price == pytest.approx(entry["pricePerShare"]["today"])
    today = [p for p in result.history if p.vault_id == vault.id]
    assert len(today) == 1 and today[0].apy == pytest.approx(entry["netAPY"] * 100)


async def test_every_vault_of_both_chains_with_risk_level() -> None:
    result = await run_offline(YearnProcessor(chains=YEARN_CHAINS))
    metas = {chain: load(f"yearn/vaults_{chain}.json")["vaults"] for chain in YEARN_CHAINS}
    assert len(result.vaults) == sum(len(v) for v in metas.values())
    assert {v.chain for v in result.vaults} == {"ethereum", "base"}
    by_id = {v.id: v for v in result.vaults}
    address, meta = next((a, m) for a, m in metas[1].items() if m["metadata"]["riskLevel"] >= 2)
    vault = by_id[f"yearn:ethereum:{address}"]
    assert vault.security_inputs is not None
    assert f"yearn:risk_level_{meta['metadata']['riskLevel']}" in vault.security_inputs.source_flags
    retired = [a for a, m in metas[1].items() if m["metadata"]["isRetired"]]
    assert all(by_id[f"yearn:ethereum:{a}"].status == "eol" for a in retired)


async def test_unrecorded_chain_is_a_warning_and_all_missing_is_an_error() -> None:
    result = await run_offline(YearnProcessor(chains=(1, 10)))
    assert {v.chain for v in result.vaults} == {"ethereum"}
    assert any(w.startswith("vaults 10:") for w in result.warnings)

    def down(request: httpx.Request) -> httpx.Response:
        if request.url.host == "raw.githubusercontent.com":
            return httpx.Response(500)
        return fixture_handler(request)

    with pytest.raises(RuntimeError, match="no vault file"):
        await run_offline(YearnProcessor(chains=YEARN_CHAINS), down)
