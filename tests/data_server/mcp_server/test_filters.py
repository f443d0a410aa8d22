"""Filter compilation: what the flattened parameters turn into (built by albert.search.filters)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from data_server.mcp_server.search import SearchVaultsInput, compile_filters


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
        "chain:=[ethereum,arbitrum] && protocol:!=[beefy] && "
        "(asset_symbols:=[USDC] || name:USDC) && stablecoin:=true && apy:>=4 && "
        "apy:<=30.5 && tvl_usd:>=1000000 && risk_rating:=[low,medium] && il_risk:=false "
        "&& exposure:=single && audits:>0 && status:=active"
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
