"""The compiler, case by case: typed query -> exact filter_by and sort_by strings."""

from __future__ import annotations

import re
from typing import Any

import pytest

from albert.search.filters import FilterValueError, all_of, any_of, number, quote_value
from albert.tools.token_search.compiler import PER_PAGE, QUERY_BY, compile_query
from albert.tools.token_search.query import Chain, SortField, TokenSearchQuery
from data_server.tokens.schema import field_types, tokens_schema

# (arguments, filter_by, sort_by)
CASES: list[tuple[dict[str, Any], str | None, str]] = [
    ({}, None, "rank:asc"),
    ({"query": "usdc"}, None, "_text_match:desc,rank:asc"),
    (
        {"stablecoin": True, "min_market_cap_usd": 1_000_000, "sort_by": "rank"},
        "marketcap:>=1000000 && stablecoin:=true",
        "rank:asc",
    ),
    ({"stablecoin": False}, "stablecoin:=false", "rank:asc"),
    ({"chain": "ethereum"}, "chain:=ethereum", "rank:asc"),
    ({"chain": "bsc", "stablecoin": True}, "chain:=bsc && stablecoin:=true", "rank:asc"),
    ({"chain": "BNB"}, "chain:=bsc", "rank:asc"),
    ({"chain": "  Solana "}, "chain:=solana", "rank:asc"),
    ({"min_market_cap_usd": 1e9}, "marketcap:>=1000000000", "rank:asc"),
    ({"max_market_cap_usd": 5e8}, "marketcap:<=500000000", "rank:asc"),
    (
        {"min_market_cap_usd": 1e6, "max_market_cap_usd": 1e9},
        "marketcap:[1000000..1000000000]",
        "rank:asc",
    ),
    ({"min_market_cap_usd": 0}, "marketcap:>=0", "rank:asc"),
    ({"min_market_cap_usd": 1234.5}, "marketcap:>=1234.5", "rank:asc"),
    ({"min_liquidity_usd": 50_000}, "liquidity:>=50000", "rank:asc"),
    ({"min_liquidity_usd": 10, "max_liquidity_usd": 10}, "liquidity:[10..10]", "rank:asc"),
    ({"max_liquidity_usd": 999.99}, "liquidity:<=999.99", "rank:asc"),
    ({"min_vol_mcap_ratio": 0.1}, "vol_mcap_ratio:>=0.1", "rank:asc"),
    ({"min_vol_mcap_ratio": 0.00001}, "vol_mcap_ratio:>=0.00001", "rank:asc"),
    ({"min_vol_mcap_ratio": 1e-12}, "vol_mcap_ratio:>=0", "rank:asc"),
    (
        {"min_vol_mcap_ratio": 0.01, "max_vol_mcap_ratio": 0.5},
        "vol_mcap_ratio:[0.01..0.5]",
        "rank:asc",
    ),
    ({"min_authenticity_score": 70}, "authenticity_score:>=70", "rank:asc"),
    ({"max_authenticity_score": 39}, "authenticity_score:<=39", "rank:asc"),
    (
        {"min_authenticity_score": 0, "max_authenticity_score": 100},
        "authenticity_score:[0..100]",
        "rank:asc",
    ),
    ({"min_holders": 1000}, "holders:>=1000", "rank:asc"),
    ({"min_holders": 10, "max_holders": 5000}, "holders:[10..5000]", "rank:asc"),
    (
        {"price_change_window": "24h", "min_price_change_pct": 5},
        "price_change_24h:>=5",
        "rank:asc",
    ),
    (
        {"price_change_window": "1h", "max_price_change_pct": -2.5},
        "price_change_1h:<=-2.5",
        "rank:asc",
    ),
    (
        {"price_change_window": "7d", "min_price_change_pct": -10, "max_price_change_pct": 10},
        "price_change_7d:[-10..10]",
        "rank:asc",
    ),
    (
        {"price_change_window": "24h", "min_price_change_pct": -100},
        "price_change_24h:>=-100",
        "rank:asc",
    ),
    ({"sort_by": "marketcap"}, None, "marketcap:desc,rank:asc"),
    ({"sort_by": "marketcap", "sort_direction": "asc"}, None, "marketcap:asc,rank:asc"),
    ({"sort_by": "rank", "sort_direction": "desc"}, None, "rank:desc"),
    ({"sort_by": "liquidity"}, None, "liquidity:desc,rank:asc"),
    ({"sort_by": "volume_24h"}, None, "volume_24h:desc,rank:asc"),
    ({"sort_by": "vol_mcap_ratio"}, None, "vol_mcap_ratio:desc,rank:asc"),
    ({"sort_by": "authenticity_score"}, None, "authenticity_score:desc,rank:asc"),
    ({"sort_by": "holders"}, None, "holders:desc,rank:asc"),
    ({"sort_by": "price_change_1h"}, None, "price_change_1h:desc,rank:asc"),
    (
        {"sort_by": "price_change_24h", "sort_direction": "asc"},
        None,
        "price_change_24h:asc,rank:asc",
    ),
    ({"sort_by": "price_change_7d"}, None, "price_change_7d:desc,rank:asc"),
    ({"query": "eth", "sort_by": "marketcap"}, None, "marketcap:desc,rank:asc"),
    (
        {
            "chain": "arbitrum",
            "min_market_cap_usd": 1e6,
            "max_market_cap_usd": 1e12,
            "min_liquidity_usd": 1e5,
            "min_vol_mcap_ratio": 0.02,
            "max_vol_mcap_ratio": 2,
            "min_authenticity_score": 60,
            "min_holders": 100,
            "stablecoin": False,
            "price_change_window": "24h",
            "min_price_change_pct": -3,
            "max_price_change_pct": 3,
            "sort_by": "volume_24h",
        },
        "chain:=arbitrum && marketcap:[1000000..1000000000000] && liquidity:>=100000"
        " && vol_mcap_ratio:[0.02..2] && authenticity_score:>=60 && holders:>=100"
        " && stablecoin:=false && price_change_24h:[-3..3]",
        "volume_24h:desc,rank:asc",
    ),
    (
        {"stablecoin": True, "chain": "tron", "max_market_cap_usd": 1e11},
        "chain:=tron && marketcap:<=100000000000 && stablecoin:=true",
        "rank:asc",
    ),
]


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize(("args", "filter_by", "sort_by"), CASES)
def test_compiles_exactly(args: dict[str, Any], filter_by: str | None, sort_by: str) -> None:
    compiled = compile_query(TokenSearchQuery.model_validate(args))
    assert compiled.filter_by == filter_by
    assert compiled.sort_by == sort_by
    assert compiled.query_by == QUERY_BY
    assert compiled.per_page == PER_PAGE == 10


def test_query_text_page_and_defaults() -> None:
    compiled = compile_query(TokenSearchQuery(query="  wrapped   bitcoin ", page=3))
    assert compiled.q == "wrapped bitcoin"
    assert compiled.page == 3
    assert compile_query(TokenSearchQuery(query="   ")).q == "*"
    params = compiled.to_params().to_query()
    assert params["q"] == "wrapped bitcoin" and params["page"] == "3" and params["per_page"] == "10"
    assert "filter_by" not in params


def test_compilation_is_deterministic() -> None:
    args = CASES[-2][0]
    first = compile_query(TokenSearchQuery.model_validate(args))
    # Field order in the input does not change the output.
    reordered = dict(reversed(list(args.items())))
    assert compile_query(TokenSearchQuery.model_validate(reordered)) == first


_CLAUSE_FIELD = re.compile(r"(?:^|&& |\|\| |\()([a-z_0-9]+):")


def _emitted_fields(filter_by: str | None, sort_by: str) -> set[str]:
    fields = set(_CLAUSE_FIELD.findall(filter_by or ""))
    fields |= {part.split(":")[0] for part in sort_by.split(",")}
    return fields - {"_text_match"}


def test_only_schema_fields_are_emitted() -> None:
    schema_fields = field_types()
    emitted: set[str] = set()
    for args, _, _ in CASES:
        compiled = compile_query(TokenSearchQuery.model_validate(args))
        emitted |= _emitted_fields(compiled.filter_by, compiled.sort_by)
        emitted |= set(compiled.query_by.split(","))
    for field in SortField:
        compiled = compile_query(TokenSearchQuery(sort_by=field))
        emitted |= _emitted_fields(compiled.filter_by, compiled.sort_by)
    assert emitted <= set(schema_fields), emitted - set(schema_fields)
    # Every sort option and every filtered field is in the table above.
    assert {f.value for f in SortField} <= emitted
    numeric = {"int32", "int64", "float"}
    for field in SortField:
        assert schema_fields[field.value] in numeric
    assert schema_fields["stablecoin"] == "bool"
    assert tokens_schema()["default_sorting_field"] == "rank"


def test_chain_enum_names_the_slugs_in_its_description() -> None:
    description = TokenSearchQuery.model_json_schema()["properties"]["chain"]["description"]
    for chain in Chain:
        assert chain.value in description


# --- the filter helpers the compiler is built on ---


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ethereum", "ethereum"),
        ("0xA0b8", "0xA0b8"),
        ("bnb-chain_1.0", "bnb-chain_1.0"),
        ("a,b", "`a,b`"),
        ("two words", "`two words`"),
        ("x && y:=1", "`x && y:=1`"),
        ("[1..2]", "`[1..2]`"),
        ("(x)", "`(x)`"),
    ],
)
def test_quote_value(value: str, expected: str) -> None:
    assert quote_value(value) == expected


def test_quote_value_refuses_backticks_and_empty() -> None:
    with pytest.raises(FilterValueError, match="backtick"):
        quote_value("a`b")
    with pytest.raises(FilterValueError, match="empty"):
        quote_value("")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e6, "1000000"),
        (1e15, "1000000000000000"),
        (2.5e-5, "0.000025"),
        (1e-9, "0"),
        (-3.75, "-3.75"),
        (123456789, "123456789"),
        (0.1 + 0.2, "0.3"),
    ],
)
def test_number(value: float, expected: str) -> None:
    assert number(value) == expected


def test_number_refuses_non_finite_and_bool() -> None:
    for bad in (float("nan"), float("inf")):
        with pytest.raises(FilterValueError):
            number(bad)
    with pytest.raises(FilterValueError):
        number(True)


def test_or_groups_are_parenthesised() -> None:
    group = any_of(["chain:=base", "chain:=arbitrum"])
    assert group == "(chain:=base || chain:=arbitrum)"
    assert all_of(["stablecoin:=true", group]) == (
        "stablecoin:=true && (chain:=base || chain:=arbitrum)"
    )
    # A bare OR clause handed to all_of is wrapped too.
    assert all_of(["a:=1 || b:=2", "c:=3"]) == "(a:=1 || b:=2) && c:=3"
    # ... but one already wrapped is not wrapped twice; "(x) || (y)" is not "wrapped".
    assert all_of(["(a:=1 || b:=2)"]) == "(a:=1 || b:=2)"
    assert all_of(["(a:=1) || (b:=2)"]) == "((a:=1) || (b:=2))"
    assert any_of(["a:=1"]) == "a:=1"
    assert any_of([None]) is None and all_of([]) is None
