"""Validation of the typed query: what the model sees, and what it may not ask for."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from pydantic import ValidationError

from albert.tools.token_search.query import Chain, SortField, TokenSearchQuery, default_direction
from albert.validation import validation_message

from .strategies import invalid_query_args, valid_query_args


def _message(args: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        TokenSearchQuery.model_validate(args)
    return validation_message(info.value)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            {"min_market_cap_usd": 10, "max_market_cap_usd": 5},
            "min_market_cap_usd (10) is greater than max_market_cap_usd (5)",
        ),
        ({"min_holders": 7, "max_holders": 6}, "min_holders (7) is greater than max_holders (6)"),
        ({"min_liquidity_usd": -1}, "min_liquidity_usd: must not be negative (got -1)"),
        (
            {"min_authenticity_score": 101},
            "min_authenticity_score: authenticity scores run from 0 to 100 (got 101)",
        ),
        ({"max_authenticity_score": -3}, "0 to 100 (got -3)"),
        ({"min_price_change_pct": 5}, "need price_change_window ('1h', '24h' or '7d')"),
        ({"price_change_window": "24h"}, "use sort_by=price_change_24h"),
        (
            {"price_change_window": "24h", "min_price_change_pct": -101},
            "cannot fall by more than 100%",
        ),
        ({"price_change_window": "30d", "min_price_change_pct": 1}, "price_change_window"),
        ({"sort_direction": "asc"}, "sort_direction needs sort_by"),
        ({"sort_by": "price"}, "sort_by"),
        ({"page": 0}, "page"),
        ({"chain": "dogechain"}, "chain"),
        ({"min_market_cap_usd": float("inf")}, "must be a finite number"),
        ({"min_vol_mcap_ratio": 2e6}, "must be at most 1e+06"),
        ({"query": "x" * 201}, "query"),
        ({"minimum_market_cap": 1}, "minimum_market_cap: Extra inputs are not permitted"),
    ],
)
def test_refused_with_clear_message(args: dict[str, Any], fragment: str) -> None:
    assert fragment in _message(args)


def test_accepts_aliases_and_normalises() -> None:
    q = TokenSearchQuery.model_validate({"chain": "ETH", "query": "  usd   coin "})
    assert q.chain is Chain.ethereum and q.query == "usd coin"
    assert TokenSearchQuery.model_validate({"chain": "Arbitrum One"}).chain is Chain.arbitrum
    assert TokenSearchQuery(query="").query is None


def test_default_directions() -> None:
    assert default_direction(SortField.rank) == "asc"
    for field in SortField:
        if field is not SortField.rank:
            assert default_direction(field) == "desc"
    assert TokenSearchQuery(sort_by=SortField.holders).effective_direction() == "desc"
    assert TokenSearchQuery(sort_by=SortField.rank).effective_direction() == "asc"
    assert TokenSearchQuery().effective_direction() is None


def test_every_field_is_described_for_the_model() -> None:
    schema = TokenSearchQuery.model_json_schema()
    assert schema.get("additionalProperties") is False
    for name, prop in schema["properties"].items():
        assert len(prop.get("description", "")) >= 20, name
    sort_desc = schema["properties"]["sort_by"]["description"]
    for field in SortField:
        assert field.value in sort_desc


@settings(max_examples=150, deadline=None)
@given(valid_query_args())
def test_generated_valid_queries_validate(args: dict[str, Any]) -> None:
    TokenSearchQuery.model_validate(args)


@settings(max_examples=200, deadline=None)
@given(invalid_query_args())
def test_generated_invalid_queries_are_refused(case: tuple[dict[str, Any], str]) -> None:
    args, fragment = case
    message = _message(args)
    assert fragment in message, message
