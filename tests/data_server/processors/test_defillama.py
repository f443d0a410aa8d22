"""DefiLlama processor: /pools and /chart/{pool} from recorded responses, percent APY."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from data_server.fixtures import csv_pool_rows, load, offline_transport, recorded_chart_pools
from data_server.processors import DefiLlamaProcessor
from data_server.processors.base import DAY, chain_slug, parse_time
from data_server.vaults.model import Vault, is_outlier

from .conftest import run_offline

CAMEL = "defillama/pools_camel_30_2025-12-24_timwf.json"
SNAKE = "defillama/pools_enriched_snake_2025-08-31_PaulApivat.json"
HISTORY = "defillama/pool_history_daily_6pools_PaulApivat.json"


def _recordings() -> list[dict[str, dict]]:
    """Each /pools recording by pool id, oldest first (2025-08-31, 2025-12-24, 2026-09-02)."""
    return [
        {r["pool"]: r for r in load(SNAKE)},
        {r["poolId"]: r for r in load(CAMEL)["pools"]},
        {r["poolId"]: r for r in csv_pool_rows()},
    ]


def _newest_apy() -> dict[str, float | None]:
    newest: dict[str, float | None] = {}
    for recording in _recordings():
        newest.update({pool: row["apy"] for pool, row in recording.items()})
    return newest


async def test_pools_keep_percent_apy_and_stable_ids() -> None:
    result = await run_offline(DefiLlamaProcessor(chart_pools=[]))
    by_id = {v.id: v for v in result.vaults}
    later = _recordings()[2]
    row = next(r for r in load(CAMEL)["pools"] if r["poolId"] not in later)
    vault = by_id[f"defillama:ethereum:{row['poolId']}"]
    # DefiLlama already reports percent: the value passes through unchanged.
    assert vault.apy == pytest.approx(row["apy"])
    assert vault.apy_base == pytest.approx(row["apyBase"])
    assert 5.0 <= vault.apy <= 10.0  # the export was filtered to 5–10 % pools
    assert vault.tvl_usd == pytest.approx(row["tvlUsd"])
    assert vault.stablecoin is True and vault.exposure == "single"
    assert vault.protocol == row["project"]
    assert vault.security_score is not None and vault.risk_rating is not None


async def test_snake_case_rows_are_normalised() -> None:
    result = await run_offline(DefiLlamaProcessor(chart_pools=[]))
    by_id = {v.id: v for v in result.vaults}
    snake = load(SNAKE)
    row = next(r for r in snake if r["il_risk"] == "yes" and r["chain"] == "BSC")
    vault = by_id[f"defillama:bsc:{row['pool']}"]
    assert vault.apy == pytest.approx(row["apy"])
    assert vault.il_risk is True
    assert vault.asset_symbols == [s.upper() for s in row["symbol"].split("-")]
    expected_time = datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00"))
    assert vault.updated_at == int(expected_time.timestamp())
    # Every source row becomes one vault; pools present in several files are merged once.
    assert len(result.vaults) == len(_newest_apy())


async def test_pool_in_two_recordings_keeps_the_newer_row() -> None:
    snake, camel, top = (set(recording) for recording in _recordings())
    shared = sorted((camel & snake) | (top & (camel | snake)))
    assert camel & snake - top and top & camel, "the recordings overlap"
    result = await run_offline(DefiLlamaProcessor(chart_pools=[]))
    by_pool = {v.id.rsplit(":", 1)[1]: v for v in result.vaults}
    newest = _newest_apy()
    for pool in shared:
        assert by_pool[pool].apy == pytest.approx(newest[pool])


async def test_a_mirror_export_reads_as_the_api_rows_it_was() -> None:
    # The CSV mirror of /pools: every cell typed back, its fetch time the vault's time.
    result = await run_offline(DefiLlamaProcessor(chart_pools=[]))
    by_id = {v.id: v for v in result.vaults}
    rows = csv_pool_rows()
    assert len(rows) == 424
    scraped = int(datetime(2026, 9, 2, 11, 57, 41, tzinfo=UTC).timestamp())
    for row in rows:
        vault = by_id[f"defillama:{chain_slug(row['chain'])}:{row['poolId']}"]
        assert vault.apy == (None if row["apy"] is None else pytest.approx(row["apy"]))
        assert vault.tvl_usd == pytest.approx(row["tvlUsd"])
        assert vault.updated_at == scraped
        assert vault.stablecoin is row["stablecoin"]
        flags = vault.security_inputs.source_flags if vault.security_inputs else None
        assert is_outlier(vault.apy, flags) is (row["outlier"] or (vault.apy or 0) > 1000)
    assert "defillama:hyperliquid:9f25a954-db87-4bb2-a8b2-4be0b843a44c" in by_id


async def test_chart_history_is_daily_percent() -> None:
    pools = recorded_chart_pools()
    result = await run_offline(DefiLlamaProcessor(chart_pools=pools))
    rows = [r for r in load(HISTORY) if r["pool_id_defillama"] == pools[0]]
    vid = next(v.id for v in result.vaults if v.id.endswith(pools[0]))
    points = [p for p in result.history if p.vault_id == vid]
    assert len(points) >= len(rows)
    by_ts = {p.timestamp: p for p in points}
    for row in rows[:50]:
        ts = int(datetime.fromisoformat(row["timestamp"]).replace(tzinfo=UTC).timestamp())
        assert ts % DAY == 0
        assert by_ts[ts].apy == pytest.approx(row["apy"])
        assert by_ts[ts].tvl_usd == pytest.approx(row["tvl_usd"])


async def test_missing_chart_is_a_warning_not_a_failure() -> None:
    result = await run_offline(DefiLlamaProcessor(chart_pools=["no-such-pool"]))
    assert result.vaults
    assert any("no-such-pool" in w for w in result.warnings)


async def test_pools_endpoint_failure_raises() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, text="upstream down")

    with pytest.raises(httpx.HTTPStatusError):
        await run_offline(DefiLlamaProcessor(), broken)


async def test_top_tvl_pools_get_charts_by_default() -> None:
    seen: list[str] = []

    def spy(request: httpx.Request) -> httpx.Response:
        from data_server.fixtures import fixture_handler

        seen.append(request.url.path)
        return fixture_handler(request)

    await run_offline(DefiLlamaProcessor(chart_limit=3), spy)
    charts = [p for p in seen if p.startswith("/chart/")]
    assert len(charts) == 3
    tvl = {r["pool"]: r["tvl_usd"] for r in load(SNAKE)}
    tvl.update({r["poolId"]: r["tvlUsd"] for r in load(CAMEL)["pools"]})
    tvl.update({r["poolId"]: r["tvlUsd"] for r in csv_pool_rows()})
    top = sorted(tvl, key=lambda p: tvl[p] or 0, reverse=True)[:3]
    assert sorted(p.removeprefix("/chart/") for p in charts) == sorted(top)


def test_parse_time_reads_every_spelling_the_sources_use() -> None:
    assert parse_time("2025-12-24T07:27:01.123456789Z") == 1_766_561_221
    assert parse_time("2025-12-24T07:27:01Z") == 1_766_561_221
    assert parse_time("2025-12-24T09:27:01.5+02:00") == 1_766_561_221
    assert parse_time("2025-12-24") == 1_766_534_400
    assert parse_time(1_766_561_221_000) == 1_766_561_221
    assert parse_time(1_766_561_221) == 1_766_561_221
    assert parse_time("not a time") is None
    assert parse_time("") is None and parse_time(None) is None and parse_time(True) is None


@pytest.mark.parametrize("size", [1, 7, 500, 100_000])
async def test_slices_are_the_parsed_vaults_each_once_and_final(size: int) -> None:
    processor = DefiLlamaProcessor(chart_pools=recorded_chart_pools())
    async with httpx.AsyncClient(transport=offline_transport()) as client:
        raw = await processor.fetch(client)
    # Pools listed twice, here the older row first: the slices hold the newer one, once.
    rows = raw.responses["pools"].body["data"]
    rows.reverse()
    whole = processor.parse(raw)
    slices = processor.parse_slices(raw, size)
    seen: list[Vault] = []
    while True:
        try:
            part = next(slices)
        except StopIteration as stop:
            result = stop.value
            break
        assert 0 < len(part) <= size
        seen.extend(part)
    assert [v.model_dump() for v in seen] == [v.model_dump() for v in whole.vaults]
    assert len({v.id for v in seen}) == len(seen)
    assert result == whole
    by_pool = {v.id.rsplit(":", 1)[1]: v for v in seen}
    newest = _newest_apy()
    assert all(by_pool[p].apy == pytest.approx(apy) for p, apy in newest.items())


async def test_a_broken_page_link_falls_back_to_the_pools_defillama_page() -> None:
    result = await run_offline(DefiLlamaProcessor(chart_pools=[]))
    broken = [r for r in load(SNAKE) if "factory=undefined" in (r.get("url") or "")]
    assert broken, "the recording holds Aerodrome links built from a missing factory"
    urls = {v.id: v.url for v in result.vaults}
    for row in broken:
        url = urls.get(f"defillama:{chain_slug(row['chain'])}:{row['pool']}")
        assert url is None or "undefined" not in url
    assert all("undefined" not in (u or "") for u in urls.values())
