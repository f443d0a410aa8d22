"""Which protocol slugs a search_protocols query names."""

from __future__ import annotations

import pytest

from data_server.mcp_server.catalog_tools import protocol_matches


@pytest.mark.parametrize(
    ("query", "slug", "expected"),
    [
        ("aave", "aave-v3", True),
        ("Aave V3", "aave-v3", True),
        ("curve finance", "curve-dex", True),
        ("curve", "curve-llamalend", True),
        ("llamalend", "curve-llamalend", True),
        ("aerodrome", "aerodrome-slipstream", True),
        ("yearn", "yearn-finance", True),
        ("pancakeswap amm v3", "pancakeswap-amm-v3", True),
        ("pendle", "pancakeswap-amm-v3", False),
        ("pendle", "beefy", False),
        ("finance", "yearn-finance", True),  # the slug itself contains it
        ("defi finance", "curve-dex", False),
        ("dex", "curve-dex", True),
        ("ur", "curve-dex", False),
        ("uniswap-v9", "curve-dex", False),
    ],
)
def test_protocol_matches(query: str, slug: str, expected: bool) -> None:
    assert protocol_matches(query, slug) is expected
