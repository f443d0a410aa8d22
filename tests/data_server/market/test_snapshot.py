"""One source of truth per token fact: the token index and the token analysis agree."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from data_server.market import load_market_snapshot, snapshot
from data_server.market.snapshot import newest_rows
from data_server.platform.data import PlatformData
from data_server.platform.tokens import TokenIndex
from data_server.tokens.seed import build_token_documents


def _row(coin: str, updated: str, cap: float) -> dict[str, object]:
    return {
        "id": coin,
        "symbol": coin[:3],
        "name": coin,
        "market_cap": cap,
        "last_updated": updated,
    }


def test_the_newest_row_of_a_coin_wins_whatever_the_file_order() -> None:
    old = {"old": [_row("usd-coin", "2023-01-02T17:08:13Z", 44.7e9)]}
    new = {"new": [_row("usd-coin", "2024-08-15T15:21:14Z", 34.5e9)]}
    for recordings in ({**old, **new}, {**new, **old}):
        row = newest_rows(recordings)["usd-coin"]
        assert row.market_cap == 34.5e9 and row.source == "new"


def test_every_indexed_coin_shows_the_same_facts_in_analysis_and_search() -> None:
    market = load_market_snapshot()
    analysis = TokenIndex(PlatformData.from_fixtures(market=market))
    docs = [d for d in build_token_documents(market=market) if d.source == "coingecko"]
    assert len({d.coingecko_id for d in docs}) == len(market.listings)
    checked = 0
    for doc in docs:
        if doc.address == "native":
            found = [
                a
                for a in analysis.by_symbol(doc.symbol)
                if a.identity.coingecko_id == doc.coingecko_id
            ]
            assert len(found) == 1, doc.id
            token = found[0]
        else:
            by_address = analysis.by_address(doc.chain, doc.address)
            if by_address is None:  # a chain the analysis service does not cover (e.g. tron)
                assert doc.chain not in {"ethereum", "base", "arbitrum", "optimism"}, doc.id
                continue
            token = by_address
        assert token.identity.coingecko_id == doc.coingecko_id
        assert token.market is not None
        assert token.market.market_cap_usd == doc.marketcap, doc.id
        assert token.market.price_usd == doc.price_usd, doc.id
        as_of = datetime.fromisoformat(str(token.market.as_of).replace("Z", "+00:00"))
        assert int(as_of.astimezone(UTC).timestamp()) == doc.as_of, doc.id
        checked += 1
    assert checked >= len(market.listings)


def test_usdc_is_one_fact_everywhere() -> None:
    market = load_market_snapshot()
    usdc = TokenIndex(PlatformData.from_fixtures(market=market)).by_symbol("usdc")[0]
    assert usdc.market is not None
    assert usdc.market.market_cap_usd == 34_530_711_832
    assert usdc.sources[0] == "CoinGecko /coins/markets (USD), recorded 2024-08-15"
    docs = [d for d in build_token_documents(market=market) if d.symbol == "USDC"]
    assert docs and {d.marketcap for d in docs} == {34_530_711_832}


def test_a_listed_coin_without_a_recorded_row_is_refused(tmp_path: Path) -> None:
    for name in snapshot.RECORDINGS:
        (tmp_path / name).write_text("[]")
    (tmp_path / snapshot.DEPLOYMENTS).write_text(
        '{"coins": {"ghost": {"deployments": [["ethereum", "native"]]}}}'
    )
    with pytest.raises(ValueError, match="ghost"):
        snapshot.load_market_snapshot(tmp_path)
