"""Beefy processor: recorded vault configs and platforms; APY fractions become percent."""

from __future__ import annotations

import json

import httpx
import pytest

from data_server.fixtures import BEEFY_CHAINS, fixture_handler, load
from data_server.processors import BeefyProcessor

from .conftest import run_offline


def _configs() -> list[dict]:
    return [c for chain in BEEFY_CHAINS for c in load(f"beefy/vaults_config_{chain}.json")]


async def test_every_config_becomes_a_vault_without_invented_apy() -> None:
    result = await run_offline(BeefyProcessor())
    configs = _configs()
    assert len(result.vaults) == len(configs)
    by_id = {v.id: v for v in result.vaults}
    config = configs[0]
    vault = by_id[f"beefy:{config['network']}:{config['id']}"]
    assert vault.address == config["earnContractAddress"].lower()
    assert vault.asset_symbols == [a.upper() for a in config["assets"]]
    # No /apy or /tvl recording exists: the vaults say "unknown", and the run says why.
    assert all(v.apy is None and v.tvl_usd is None for v in result.vaults)
    assert any(w.startswith("tvl:") for w in result.warnings)
    statuses = {c["status"] for c in configs}
    assert {v.status for v in result.vaults} == statuses


async def test_risk_checklist_and_platform_tags_feed_the_score() -> None:
    result = await run_offline(BeefyProcessor())
    configs = {c["id"]: c for c in _configs()}
    platforms = {p["id"]: p for p in load("beefy/platforms.json")}
    tagged = next(
        v
        for v in result.vaults
        if platforms.get(configs[v.id.split(":", 2)[2]]["platformId"], {}).get("risks")
    )
    config = configs[tagged.id.split(":", 2)[2]]
    assert tagged.security_inputs is not None
    flags = tagged.security_inputs.source_flags
    for tag in platforms[config["platformId"]]["risks"]:
        assert f"beefy-platform:{tag}" in flags
    for name, failed in config["risks"].items():
        if isinstance(failed, bool):
            assert (f"beefy:{name}" in flags) is failed
    not_audited = [
        v
        for v in result.vaults
        if v.security_inputs and "beefy:notAudited" in v.security_inputs.source_flags
    ]
    assert not_audited, "the recordings contain vaults that failed the audit check"
    assert all(v.security_inputs and v.security_inputs.audits == 0 for v in not_audited)


async def test_apy_breakdown_and_tvl_fractions_become_percent() -> None:
    """A hand-made /apy/breakdown and /tvl in the API's documented shape (no recording)."""
    configs = _configs()
    first, second = configs[0], configs[1]
    breakdown = {
        first["id"]: {"totalApy": 0.0523, "tradingApr": 0.012, "vaultApr": 0.039},
        second["id"]: {"totalApy": 1.5},
    }
    tvl = {"1": {first["id"]: 1_250_000.5}}

    def with_apy(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.beefy.finance" and request.url.path == "/apy/breakdown":
            return httpx.Response(200, content=json.dumps(breakdown).encode())
        if request.url.host == "api.beefy.finance" and request.url.path == "/tvl":
            return httpx.Response(200, content=json.dumps(tvl).encode())
        return fixture_handler(request)

    result = await run_offline(BeefyProcessor(), with_apy)
    by_native = {v.id.split(":", 2)[2]: v for v in result.vaults}
    one = by_native[first["id"]]
    assert one.apy == pytest.approx(5.23)
    assert one.apy_base == pytest.approx(1.2)
    assert one.apy_reward == pytest.approx(5.23 - 1.2)
    assert one.tvl_usd == pytest.approx(1_250_000.5)
    assert by_native[second["id"]].apy == pytest.approx(150.0)
    # A snapshot history point is written for vaults that have values.
    assert {p.vault_id for p in result.history} == {one.id, by_native[second["id"]].id}


async def test_plain_apy_endpoint_is_used_when_breakdown_is_missing() -> None:
    first = _configs()[0]

    def plain(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.beefy.finance" and request.url.path == "/apy":
            return httpx.Response(200, content=json.dumps({first["id"]: 0.08}).encode())
        return fixture_handler(request)

    result = await run_offline(BeefyProcessor(), plain)
    vault = next(v for v in result.vaults if v.id.endswith(":" + first["id"]))
    assert vault.apy == pytest.approx(8.0)
