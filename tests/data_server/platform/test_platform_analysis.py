"""Risk read and feed ranking on data built in the test, without HTTP."""

from __future__ import annotations

from albert.tools.platform_client import FeedItem
from data_server.platform.data import ContractRecord, MarketRow, PlatformData
from data_server.platform.feed import FeedIndex
from data_server.platform.tokens import TokenIndex


def _row(**overrides: object) -> MarketRow:
    base: dict[str, object] = {
        "id": "demo",
        "symbol": "demo",
        "name": "Demo",
        "current_price": 1.0,
        "market_cap": 50_000_000.0,
        "fully_diluted_valuation": 250_000_000.0,
        "total_volume": 40_000_000.0,
        "high_24h": 1.3,
        "low_24h": 0.9,
        "price_change_percentage_24h": 22.0,
        "circulating_supply": 50_000_000.0,
        "total_supply": 250_000_000.0,
        "max_supply": 250_000_000.0,
        "ath": 10.0,
        "ath_change_percentage": -90.0,
        "ath_date": "2024-01-01T00:00:00Z",
    }
    base.update(overrides)
    return MarketRow.model_validate(base)


def test_risky_token_gets_high_notes_with_figures() -> None:
    analysis = TokenIndex(PlatformData(markets=[_row()])).by_symbol("DEMO")[0]
    by_key = {
        key: note for note in analysis.risk.notes for key in note.figures if note.severity != "info"
    }
    assert analysis.risk.level == "high"
    assert by_key["fdv_to_market_cap"].severity == "high"
    assert by_key["fdv_to_market_cap"].figures["fdv_to_market_cap"] == 5.0
    assert by_key["fdv_to_market_cap"].figures["circulating_share_pct"] == 20.0
    assert by_key["price_change_24h_pct"].severity == "high"
    assert by_key["range_24h_pct"].figures["range_24h_pct"] == 44.44
    assert by_key["ath_change_pct"].severity == "high"
    assert by_key["volume_to_market_cap"].severity == "moderate"  # 80% turnover
    small_cap = [n for n in analysis.risk.notes if "Small-cap" in n.finding]
    assert small_cap and small_cap[0].severity == "moderate"


def test_calm_fully_circulating_token_reads_low() -> None:
    row = _row(
        market_cap=5e9,
        fully_diluted_valuation=5e9,
        total_volume=2e8,
        high_24h=1.01,
        low_24h=0.99,
        price_change_percentage_24h=0.5,
        circulating_supply=1e9,
        total_supply=1e9,
        max_supply=1e9,
        ath_change_percentage=-5.0,
    )
    analysis = TokenIndex(PlatformData(markets=[row])).by_symbol("demo")[0]
    assert analysis.risk.level == "low"
    assert all(n.severity in ("low", "info") for n in analysis.risk.notes)


def test_token_without_market_data_is_unknown_risk() -> None:
    row = MarketRow(id="bare", symbol="bare", name="Bare")
    analysis = TokenIndex(PlatformData(markets=[row])).by_symbol("BARE")[0]
    assert analysis.risk.level == "unknown"


def test_symbol_search_orders_by_market_cap_and_address_lookup() -> None:
    small = _row(id="small", symbol="dup", name="Small", market_cap=1e6)
    big = _row(id="big", symbol="dup", name="Big", market_cap=1e9)
    contract = ContractRecord(
        coingecko_id="big", chain="base", address="0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"
    )
    index = TokenIndex(PlatformData(markets=[small, big], contracts=[contract]))
    assert [a.identity.name for a in index.by_symbol("DUP")] == ["Big", "Small"]
    found = index.by_address("base", "0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED")
    assert found is not None and found.identity.name == "Big"
    assert index.by_address("ethereum", contract.address) is None


def _item(id_: str, title: str, published: str, body: str | None = None) -> FeedItem:
    return FeedItem(
        id=id_,
        title=title,
        body=body,
        source="test",
        published_at=published,
        provenance="curated",
    )


def test_feed_recency_breaks_ties_and_zero_scores_are_dropped() -> None:
    items = [
        _item("old", "Curve pool update", "2025-01-01T00:00:00Z"),
        _item("new", "Curve pool update", "2025-06-01T00:00:00Z"),
        _item("other", "Unrelated headline", "2025-07-01T00:00:00Z"),
    ]
    result = FeedIndex(items).search("curve", limit=10)
    assert [h.item.id for h in result.hits] == ["new", "old"]
    assert result.total_matches == 2


def test_feed_title_outranks_long_body_mention() -> None:
    filler = " ".join(["market"] * 60)
    items = [
        _item("body", "Weekly digest", "2025-06-01T00:00:00Z", body=f"{filler} lido {filler}"),
        _item("title", "Lido staking withdrawals", "2025-01-01T00:00:00Z"),
    ]
    hits = FeedIndex(items).search("lido").hits
    assert [h.item.id for h in hits] == ["title", "body"]
    assert FeedIndex(items).search("lido", limit=1).total_matches == 2
