"""The yield-versus-risk bands and when the guidelines block appears."""

from __future__ import annotations

import pytest

from data_server.coaching import CoachItem, guidelines_block, yield_band


@pytest.mark.parametrize(
    ("apy", "band"),
    [
        (-1.0, "below_5"),
        (0.0, "below_5"),
        (4.9, "below_5"),
        (4.999, "below_5"),
        (5.0, "conservative"),
        (9.99, "conservative"),
        (10.0, "medium"),
        (12.0, "medium"),
        (19.99, "medium"),
        (20.0, "high"),
        (25.0, "high"),
        (40.0, "high"),
        (40.01, "extreme"),
        (41.0, "extreme"),
        (500.0, "extreme"),
    ],
)
def test_band_boundaries(apy: float, band: str) -> None:
    assert yield_band(apy) == band


def test_no_block_without_a_risk_rating() -> None:
    assert guidelines_block([]) is None
    assert guidelines_block([CoachItem(name="a", apy=12.0, chain="base")]) is None


def test_block_lists_rated_items_and_context() -> None:
    block = guidelines_block(
        [
            CoachItem(name="rated", apy=25.0, risk_rating="high", chain="arbitrum", protocol="x-y"),
            CoachItem(name="unrated", apy=3.0, chain="base"),
        ]
    )
    assert block is not None
    assert "- rated: APY 25.00% → 20–40% — high; risk rating high" in block
    assert "unrated" not in block
    assert "Arbitrum:" in block and "No curated notes for x-y" in block
