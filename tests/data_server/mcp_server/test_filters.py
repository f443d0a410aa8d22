"""Filter compilation: what the flattened parameters turn into, and precedence."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from data_server.mcp_server import filter_expr as fx
from data_server.mcp_server.search import SearchVaultsInput, compile_filters


def test_or_groups_are_parenthesised_and_and_groups_nest() -> None:
    expr = fx.all_of(
        [
            fx.eq("chain", "base"),
            fx.any_of([fx.eq("a", True), fx.all_of([fx.eq("b", "x"), fx.eq("c", "y")])]),
        ]
    )
    assert fx.render(expr) == "chain:=`base` && (a:=true || (b:=`x` && c:=`y`))"


def test_single_member_groups_render_bare_and_empty_groups_vanish() -> None:
    assert fx.render(fx.any_of([fx.eq("a", "1")])) == "a:=`1`"
    assert fx.render(fx.all_of([fx.any_of([]), None])) == ""


@pytest.mark.parametrize(
    ("value", "text"), [(1e6, "1000000"), (0.1, "0.1"), (5, "5"), (2.5e-7, "0.00000025")]
)
def test_numbers_never_use_exponents(value: float, text: str) -> None:
    assert fx.number(value) == text


def test_backticks_cannot_break_out_of_a_value() -> None:
    with pytest.raises(ValueError, match="backticks"):
        fx.quote("a`] || chain:=x")


def test_flat_parameters_compile_in_one_and_chain() -> None:
    params = SearchVaultsInput(
        chains=["ETH", "arb"],
        exclude_protocols=["beefy"],
        asset_symbol="usdc",
        stablecoin_only=True,
        min_apy=4,
        max_apy=30.5,
        min_tvl_usd=1e6,
        max_risk_rating="medium",
        audited=True,
        il_risk=False,
        exposure="single",
    )
    assert compile_filters(params) == (
        "chain:=[`ethereum`,`arbitrum`] && protocol:!=[`beefy`] && "
        "(asset_symbols:=[`USDC`] || name:`USDC`) && stablecoin:=true && apy:>=4 && "
        "apy:<=30.5 && tvl_usd:>=1000000 && risk_rating:=[`low`,`medium`] && il_risk:=false "
        "&& exposure:=`single` && audits:>0 && status:=`active`"
    )


def test_inactive_vaults_can_be_included() -> None:
    assert compile_filters(SearchVaultsInput(include_inactive=True)) == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"min_apy": 10, "max_apy": 5}, "min_apy (10) is greater than max_apy (5)"),
        ({"min_base_apy": 10, "max_apy": 5}, "min_base_apy (10) is greater than max_apy"),
        ({"audited": False, "min_audits": 2}, "contradicts"),
        ({"chain": "base", "exclude_chains": ["base"]}, "also excluded"),
        ({"asset_symbol": "US DC"}, "not a token symbol"),
        ({"max_reward_share": 120}, "less than or equal to 100"),
    ],
)
def test_contradictions_are_refused(args: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SearchVaultsInput.model_validate(args)
