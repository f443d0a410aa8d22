"""The lexicon is read from each tool's schema: a new tool's fields bind without new code."""

from __future__ import annotations

from albert.tools.base import ToolSpec
from demo_planner.binding import bind_fields
from demo_planner.lexicon import build_lexicon, phrase_table
from demo_planner.reading import read


def test_vault_search_fields_by_meaning(specs) -> None:
    lex = build_lexicon(specs["search_vaults"])
    tvl, apy = lex.numeric[("tvl", "min")], lex.numeric[("apy", "max")]
    assert (tvl.name, tvl.unit) == ("min_tvl_usd", "usd")
    assert (apy.name, apy.unit) == ("max_apy", "percent")
    assert lex.numeric[("security_score", "min")].unit == "score"
    assert lex.numeric[("audits", "min")].unit == "count"
    assert lex.numeric[("protocol_age", "min")].unit == "days"
    # Only a maximum reward share exists: a minimum must be refused, not moved elsewhere.
    assert ("reward_share", "max") in lex.numeric and ("reward_share", "min") not in lex.numeric
    assert lex.flags == {
        "stablecoin": "stablecoin_only",
        "il_risk": "il_risk",
        "audited": "audited",
        "include_inactive": "include_inactive",
        "include_outliers": "include_outliers",
    }
    assert {f.name for f in lex.enums["risk_rating"]} == {"risk_ratings", "max_risk_rating"}
    assert lex.sort_values[("tvl", None)] == "tvl_usd"
    assert lex.sort_values[("base_apy", None)] == "apy_base"
    # Quoted examples in descriptions are known values of the field.
    assert {"aave-v3", "morpho-blue"} <= lex.known["protocol"]
    assert {"USDC", "WETH"} <= lex.known["asset"]


def test_token_search_fields_by_meaning(specs) -> None:
    lex = build_lexicon(specs["search_tokens"])
    assert lex.numeric[("holders", "min")].integer
    assert lex.numeric[("vol_mcap_ratio", "min")].unit == "ratio"
    assert lex.numeric[("market_cap", "max")].unit == "usd"
    assert lex.sort_values[("price_change", "7d")] == "price_change_7d"
    assert lex.windows == ("1h", "24h", "7d")
    assert "chain" in lex.closed and "solana" in lex.known["chain"]


def test_a_tool_the_planner_was_never_written_for_binds_by_its_schema() -> None:
    spec = ToolSpec(
        name="search_pools",
        description="Search DEX pools.",
        parameters={
            "type": "object",
            "properties": {
                "min_fdv_usd": {"type": "number", "description": "Minimum FDV in USD."},
                "max_fee_pct": {"type": "number", "description": "Maximum pool fee in percent."},
                "min_swaps": {"type": "integer", "description": "Minimum number of swaps."},
                "sort_by": {"type": "string", "enum": ["fdv_usd", "swaps"]},
            },
        },
    )
    lex = build_lexicon(spec)
    table = phrase_table([lex], {})
    reading = read("pools with fee under 1% and FDV above $10M, most swaps first", table)
    binding = bind_fields(reading, lex)
    assert binding.arguments == {
        "min_fdv_usd": 1e7,
        "max_fee_pct": 1.0,
        "sort_by": "swaps",
    }
    assert binding.unbound == []


def test_the_guideline_bands_match_the_data_servers() -> None:
    from data_server.coaching import BAND_LABELS, yield_band
    from demo_planner.vocabulary import GUIDELINE_BANDS

    for low, high, label in GUIDELINE_BANDS:
        for apy in (low + 0.01, (low + min(high, 100)) / 2, min(high, 1000) - 0.01):
            assert BAND_LABELS[yield_band(apy)] == label
