"""Fresh phrasings → the tool calls they need, through real tools and the real tool loop.

Every question here was written for the planner rebuild (none is from `evals/cases/`), by
failure class: several conditions in one sentence, words that look like symbols or
protocols, conditions that used to be dropped, multi-step plans, wallets by address or
ENS name, quoted APYs, and a few of everything else. For each, the main calls must be
exactly these (tool and every argument); lookups of names in the index may come first
(and must be lookups only); follow-up calls must use what the main calls returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from demo_planner import LABEL, DemoPlanner
from demo_planner.vault_table import vault_rows
from tests.demo_planner.world import Turn, World

# One MCP session and one event loop for the whole table.
ON_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")

FIRST = "$first_vault_id"
SECOND = "$second_vault_id"
TOP_SYMBOL = "$first_token_symbol"
WALLET = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045"
OTHER_WALLET = "0x28C6c06298d514Db089934071355E5743bf21d60"
LOOKUP_TOOLS = {"search_protocols", "search_vault_assets"}


@dataclass(frozen=True)
class Row:
    """A question, the main calls it needs, the follow-ups, and what the answer must say."""

    question: str
    calls: list[tuple[str, dict[str, Any]]]
    then: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    says: tuple[str, ...] = ()


def vaults(**args: Any) -> tuple[str, dict[str, Any]]:
    return ("search_vaults", args)


def tokens(**args: Any) -> tuple[str, dict[str, Any]]:
    return ("search_tokens", args)


CURVE = {"protocol": "curve-dex", "protocols": ["curve-llamalend"]}
# Each name stands for every protocol of that name the index holds.
AAVE = {"protocol": "aave-v3", "protocols": ["aave-v4"]}
COMPOUND = {"protocol": "compound-v3", "protocols": ["compound-v2"]}

SEVERAL_CONDITIONS = [
    Row(
        "I want coins with mcap < 50M and holders > 5k",
        [tokens(max_market_cap_usd=5e7, min_holders=5001)],
    ),
    Row(
        "USDT vaults yielding 8%+ with more than 3 million TVL",
        [vaults(asset_symbol="USDT", min_apy=8.0, min_tvl_usd=3e6)],
    ),
    Row(
        "tokens with market cap over 2 billion and liquidity under $50M",
        [tokens(min_market_cap_usd=2e9, max_liquidity_usd=5e7)],
    ),
    Row(
        "show coins where holders exceed 50k and authenticity is at least 80",
        [tokens(min_holders=50_001, min_authenticity_score=80)],
    ),
    Row(
        "which tokens have a valuation between 500M and 3B and more than 100,000 holders",
        [tokens(min_market_cap_usd=5e8, max_market_cap_usd=3e9, min_holders=100_001)],
    ),
    Row(
        "tokens with liquidity of at least 1M, market cap below 10M and authenticity score "
        "under 40",
        [tokens(min_liquidity_usd=1e6, max_market_cap_usd=1e7, max_authenticity_score=39)],
    ),
    Row(
        "coins with more than 1B in market cap but under 20k holders",
        [tokens(min_market_cap_usd=1e9, max_holders=19_999)],
    ),
    Row(
        "tokens valued above $750M whose liquidity exceeds 25 million",
        [tokens(min_market_cap_usd=7.5e8, min_liquidity_usd=2.5e7)],
    ),
    Row(
        "give me tokens on solana with authenticity over 70 and mcap under 50M",
        [tokens(chain="solana", min_authenticity_score=71, max_market_cap_usd=5e7)],
    ),
    Row(
        "which coins have at least 10 million in liquidity and a volume/mcap ratio above 0.1",
        [tokens(min_liquidity_usd=1e7, min_vol_mcap_ratio=0.1)],
    ),
    Row(
        "tokens with market cap > 1B and liquidity < 5M",
        [tokens(min_market_cap_usd=1e9, max_liquidity_usd=5e6)],
    ),
    Row(
        "coins that dropped more than 5% this week with market cap over 1B",
        [tokens(max_price_change_pct=-5.0, min_market_cap_usd=1e9, price_change_window="7d")],
    ),
    Row(
        "USDC vaults on arbitrum with TVL over $10M and APY between 5 and 15%",
        [vaults(chain="arbitrum", asset_symbol="USDC", min_tvl_usd=1e7, min_apy=5.0, max_apy=15.0)],
    ),
    Row(
        "vaults on ethereum paying more than 8% with a security score of at least 80",
        [vaults(chain="ethereum", min_apy=8.0, min_security_score=80.0)],
    ),
    Row(
        "yields over 15% with TVL of at least 2 million on arbitrum",
        [vaults(chain="arbitrum", min_apy=15.0, min_tvl_usd=2e6)],
    ),
    Row(
        "vaults with base APY above 4% and reward share under 20%",
        [vaults(min_base_apy=4.0, max_reward_share=20.0)],
    ),
    Row(
        "lending vaults older than 3 years with over $100M deposits",
        [vaults(min_protocol_age_days=1096, min_tvl_usd=1e8)],
    ),
]

LOOKS_LIKE_A_SYMBOL = [
    Row("Aave's USDC vault APY", [vaults(**AAVE, asset_symbol="USDC")]),
    Row("USDC.e pools on arbitrum", [vaults(chain="arbitrum", asset_symbol="USDC.E")]),
    Row("sUSDe vaults", [vaults(asset_symbol="SUSDE")]),
    Row(
        "What are good APY options for USDC on OP?",
        [vaults(chain="optimism", asset_symbol="USDC")],
    ),
    Row(
        "LP vaults on base with TVL over 5M",
        [vaults(chain="base", exposure="multi", min_tvl_usd=5e6)],
    ),
    Row(
        "vaults with IL and a reward share above 50%",
        [vaults(il_risk=True)],
        says=("reward share",),
    ),
    Row("stETH pools with APY above 3%", [vaults(asset_symbol="STETH", min_apy=3.0)]),
    Row("wstETH vaults", [vaults(asset_symbol="WSTETH")]),
    Row("cbBTC pools on base", [vaults(chain="base", asset_symbol="CBBTC")]),
    Row("sDAI vaults", [vaults(asset_symbol="SDAI")]),
    Row("earning over 20% on ETH", [vaults(asset_symbol="ETH", min_apy=20.0)]),
    Row("vaults for ARB on arbitrum", [vaults(chain="arbitrum", asset_symbol="ARB")]),
    Row(
        "stablecoin vaults with at least 10% base yield",
        [vaults(stablecoin_only=True, min_base_apy=10.0)],
    ),
    Row("morpho vaults for USDC", [vaults(protocol="morpho-blue", asset_symbol="USDC")]),
    Row("Yearn vaults on ethereum", [vaults(chain="ethereum", protocol="yearn-finance")]),
    Row("Curve pools with TVL over $20M", [vaults(**CURVE, min_tvl_usd=2e7)]),
    Row(
        "pools with impermanent loss exposure and TVL below 5M",
        [vaults(il_risk=True, max_tvl_usd=5e6)],
    ),
    Row(
        "which Aave vaults pay the most",
        [vaults(**AAVE, sort_by="apy")],
    ),
]

DROPPED_CONDITIONS = [
    Row(
        "only audited protocols with yields above 10% on base",
        [vaults(chain="base", audited=True, min_apy=10.0)],
    ),
    Row(
        "non-stablecoin vaults above 20%",
        [vaults(min_apy=20.0)],
        says=("can only restrict to stablecoins",),
    ),
    Row(
        "vaults where rewards make up more than half of the APY",
        [vaults()],
        says=("“more than half” (reward share)",),
    ),
    Row(
        "Compare Aave and Compound for USDC",
        [vaults(**AAVE, asset_symbol="USDC"), vaults(**COMPOUND, asset_symbol="USDC")],
    ),
    Row(
        "stable yields above 10% excluding Beefy",
        [vaults(stablecoin_only=True, min_apy=10.0, exclude_protocols=["beefy"])],
    ),
    Row(
        "stablecoin yields above 12% not on bsc",
        [vaults(stablecoin_only=True, min_apy=12.0, exclude_chains=["bsc"])],
    ),
    Row(
        "is there anything yielding over 25% on stablecoins",
        [vaults(stablecoin_only=True, min_apy=25.0)],
    ),
    Row(
        "compare yields of Beefy and Yearn on base",
        [
            vaults(chain="base", protocol="beefy"),
            vaults(chain="base", protocol="yearn-finance"),
        ],
    ),
    Row(
        "compare USDC and USDT yields on ethereum",
        [
            vaults(chain="ethereum", asset_symbol="USDC"),
            vaults(chain="ethereum", asset_symbol="USDT"),
        ],
    ),
    Row(
        "unaudited vaults with APY above 50%",
        [vaults(audited=False, min_apy=50.0)],
    ),
    Row(
        "most secure audited yields on Arbitrum",
        [vaults(chain="arbitrum", audited=True, sort_by="security_score")],
    ),
    Row(
        "single-asset vaults with no impermanent loss and TVL above 50 million",
        [vaults(exposure="single", il_risk=False, min_tvl_usd=5e7)],
    ),
    Row(
        "low risk stablecoin pools on base yielding at least 6 percent",
        [vaults(chain="base", stablecoin_only=True, max_risk_rating="low", min_apy=6.0)],
    ),
    Row(
        "vaults not on ethereum with APY above 8%",
        [vaults(exclude_chains=["ethereum"], min_apy=8.0)],
    ),
    Row(
        "best DAI yields above 5% on ethereum",
        [vaults(chain="ethereum", asset_symbol="DAI", min_apy=5.0, sort_by="apy")],
    ),
    Row(
        # search_protocols has no age filter; the vaults of protocols that old carry it.
        "protocols live for over 2 years",
        [vaults(min_protocol_age_days=731)],
    ),
    Row(
        "tokens with market cap above $1B and 24h volume above $100M",
        [tokens(min_market_cap_usd=1e9)],
        says=("volume",),
    ),
]

MULTI_STEP = [
    Row(
        "Analyze the yield of the top stablecoin vault on arbitrum",
        [("top_yields", {"chain": "arbitrum", "stablecoin_only": True})],
        then=[("analyze_yield", {"vault_id": FIRST})],
    ),
    Row(
        "Give me the 30-day history of the best USDC vault on Base",
        [("top_yields", {"chain": "base", "asset_symbol": "USDC"})],
        then=[("vault_history", {"vault_id": FIRST, "days": 30})],
    ),
    Row(
        "Find the best WBTC vault and tell me how risky it is",
        [("top_yields", {"asset_symbol": "WBTC"})],
        then=[("analyze_risk", {"vault_id": FIRST})],
    ),
    Row(
        "How has the APY of the largest Curve pool changed over the last month?",
        [vaults(**CURVE, sort_by="tvl_usd")],
        then=[("vault_history", {"vault_id": FIRST, "days": 30})],
    ),
    Row(
        "show the APY history of the best stablecoin vault on arbitrum over the last 60 days",
        [("top_yields", {"chain": "arbitrum", "stablecoin_only": True})],
        then=[("vault_history", {"vault_id": FIRST, "days": 60})],
    ),
    Row(
        "how risky is the top USDC vault on base?",
        [("top_yields", {"chain": "base", "asset_symbol": "USDC"})],
        then=[("analyze_risk", {"vault_id": FIRST})],
    ),
    Row(
        "where does the yield of the largest WETH vault come from?",
        [vaults(asset_symbol="WETH", sort_by="tvl_usd")],
        then=[("analyze_yield", {"vault_id": FIRST})],
    ),
    Row(
        "analyze the risk of the 2 biggest USDT vaults",
        [vaults(asset_symbol="USDT", sort_by="tvl_usd", per_page=2)],
        then=[("analyze_risk", {"vault_id": FIRST}), ("analyze_risk", {"vault_id": SECOND})],
    ),
    Row(
        "history and risk of the safest DAI vault",
        [vaults(asset_symbol="DAI", sort_by="security_score")],
        then=[("vault_history", {"vault_id": FIRST}), ("analyze_risk", {"vault_id": FIRST})],
    ),
    Row(
        "highest-yielding USDC vault on base and its history over 30 days",
        [vaults(chain="base", asset_symbol="USDC", sort_by="apy")],
        then=[("vault_history", {"vault_id": FIRST, "days": 30})],
    ),
    Row(
        "what is the risk breakdown of the largest stablecoin vault on ethereum",
        [vaults(chain="ethereum", stablecoin_only=True, sort_by="tvl_usd")],
        then=[("analyze_risk", {"vault_id": FIRST})],
    ),
    Row(
        "analyze the biggest gainer today",
        [tokens(sort_by="price_change_24h")],
        then=[("analyze_token", {"symbol": TOP_SYMBOL})],
    ),
]

WALLETS_AND_NAMES = [
    Row("What's in vitalik.eth's wallet?", [("wallet_portfolio", {"address": "vitalik.eth"})]),
    Row(
        "largest token balance of vitalik.eth",
        [("wallet_top_positions", {"address": "vitalik.eth", "kind": "token"})],
    ),
    Row(
        f"Which vaults does {WALLET} have positions in?",
        [("wallet_positions", {"address": WALLET})],
    ),
    Row("what's the portfolio of vitalik.eth", [("wallet_portfolio", {"address": "vitalik.eth"})]),
    Row(
        "top 5 positions by value for nick.eth",
        [("wallet_top_positions", {"address": "nick.eth", "limit": 5})],
    ),
    Row(
        "list every position of alice.eth on base",
        [("wallet_positions", {"address": "alice.eth", "chains": ["base"]})],
    ),
    Row(
        f"biggest vault positions of {WALLET}",
        [("wallet_top_positions", {"address": WALLET, "kind": "vault"})],
    ),
    Row(
        "positions worth more than $1,000 held by bob.eth",
        [("wallet_positions", {"address": "bob.eth", "min_value_usd": 1000.0})],
    ),
    Row(
        "top 3 vault positions for dao.eth on ethereum",
        [
            (
                "wallet_top_positions",
                {"address": "dao.eth", "chains": ["ethereum"], "kind": "vault", "limit": 3},
            )
        ],
    ),
    Row(
        f"positions above $500 for {OTHER_WALLET}",
        [("wallet_positions", {"address": OTHER_WALLET, "min_value_usd": 500.0})],
    ),
    Row("how much is sub.name.eth worth", [("wallet_portfolio", {"address": "sub.name.eth"})]),
    Row("biggest holdings of vitalik.eth", [("wallet_top_positions", {"address": "vitalik.eth"})]),
]

QUOTED_APY = [
    Row("Should I trust a vault paying 22%?", [vaults(min_apy=20.0, max_apy=40.0)], says=("high",)),
    Row(
        "is 18% APY on a USDC pool sustainable?",
        [vaults(asset_symbol="USDC", min_apy=10.0, max_apy=20.0)],
        says=("10–20%",),
    ),
    Row(
        "someone offers 120% APY on a new farm, legit?",
        [vaults(min_apy=40.0)],
        says=("extreme",),
    ),
    Row(
        "would 9% on a stablecoin vault on base be a good deal?",
        [vaults(chain="base", stablecoin_only=True, min_apy=5.0, max_apy=10.0)],
        says=("conservative",),
    ),
    Row(
        "is 25 percent APR too good to be true for ETH staking?",
        [vaults(asset_symbol="ETH", min_apy=20.0, max_apy=40.0)],
        says=("20–40%",),
    ),
    Row("is a 4% APY worth the risk?", [vaults(min_apy=0.0, max_apy=5.0)], says=("below 5%",)),
    Row(
        "I see 7.5% on USDT, is that good?",
        [vaults(asset_symbol="USDT", min_apy=5.0, max_apy=10.0)],
        says=("5–10%",),
    ),
    Row(
        "are 30% yields sustainable on Base?",
        [vaults(chain="base", min_apy=20.0, max_apy=40.0)],
        says=("high",),
    ),
    Row("a farm pays 45% apr - too good to be true?", [vaults(min_apy=40.0)], says=("extreme",)),
]

OTHERS = [
    Row(
        "tokens that fell between 2% and 10% this week",
        [tokens(min_price_change_pct=-10.0, max_price_change_pct=-2.0, price_change_window="7d")],
    ),
    Row(
        "tokens up at least 10% in the last hour",
        [tokens(min_price_change_pct=10.0, price_change_window="1h")],
    ),
    Row(
        "memecoins with market cap under 100 million sorted by liquidity",
        [tokens(max_market_cap_usd=1e8, sort_by="liquidity")],
    ),
    Row("top tokens by holders on ethereum", [tokens(chain="ethereum", sort_by="holders")]),
    Row(
        "tokens whose 24h volume is more than a quarter of their market cap",
        [tokens(min_vol_mcap_ratio=0.25)],
    ),
    Row(
        "tokens whose 24h volume is at least twice their market cap",
        [tokens(min_vol_mcap_ratio=2.0)],
    ),
    Row(
        "coins trading less than half their market cap in volume",
        [tokens(max_vol_mcap_ratio=0.5)],
    ),
    Row("tokens sorted by volume_24h", [tokens(sort_by="volume_24h")]),
    Row(
        "Compare USDC yields on Aave and Spark",
        [
            vaults(**AAVE, asset_symbol="USDC"),
            vaults(protocol="spark-savings", protocols=["sparklend"], asset_symbol="USDC"),
        ],
    ),
    Row(
        "USDC vaults on base sorted by apy_base",
        [vaults(chain="base", asset_symbol="USDC", sort_by="apy_base")],
    ),
    Row(
        "tokens sorted by holders ascending",
        [tokens(sort_by="holders", sort_direction="asc")],
    ),
    Row(
        "how much of the APY of the top USDC vault on base is rewards",
        [("top_yields", {"chain": "base", "asset_symbol": "USDC"})],
        then=[("analyze_yield", {"vault_id": FIRST})],
    ),
    Row(
        "break down the rewards of the largest sUSDe vault on Aave",
        [vaults(**AAVE, asset_symbol="SUSDE", sort_by="tvl_usd")],
        then=[("analyze_yield", {"vault_id": FIRST})],
    ),
    Row(
        "What has the Syrup USDC vault's APY done over the last month?",
        [vaults(query="Syrup USDC")],
        then=[("vault_history", {"vault_id": FIRST, "days": 30})],
        says=("Syrup USDC",),
    ),
    Row(
        "how risky is the Steakhouse USDC pool on base",
        [vaults(chain="base", query="Steakhouse USDC")],
        then=[("analyze_risk", {"vault_id": FIRST})],
    ),
    Row(
        "the Syrup USDT vault's history",
        [vaults(query="Syrup USDT")],
        then=[("vault_history", {"vault_id": FIRST})],
    ),
    Row(
        "How has the Gauntlet USD Alpha vault performed lately?",
        [vaults(query="Gauntlet USD Alpha")],
        then=[("vault_history", {"vault_id": FIRST})],
    ),
    Row(
        "coins whose 24h trading volume exceeds their market cap",
        [tokens(min_vol_mcap_ratio=1.0)],
    ),
    Row("is USDe still pegged?", [("analyze_token", {"symbol": "USDE"})], says=("24h range",)),
    Row("did FDUSD depeg?", [("analyze_token", {"symbol": "FDUSD"})], says=("24h range",)),
    Row("sort ethereum tokens by 24h volume", [tokens(chain="ethereum", sort_by="volume_24h")]),
    Row(
        "non-stablecoin tokens on base with liquidity above half a million",
        [tokens(chain="base", stablecoin=False, min_liquidity_usd=5e5)],
    ),
    Row(
        "top 5 stablecoin vaults on ethereum",
        [("top_yields", {"chain": "ethereum", "stablecoin_only": True, "limit": 5})],
    ),
    Row(
        "riskiest vaults on arbitrum",
        [vaults(chain="arbitrum", sort_by="security_score", sort_direction="asc")],
    ),
    Row(
        "protocols with more than 500 million locked on ethereum",
        [("search_protocols", {"chain": "ethereum", "min_tvl_usd": 5e8})],
    ),
    Row("TVL of Pendle", [("search_protocols", {"query": "pendle"})]),
    Row(
        "multi-asset pools on base with more than 20 million locked",
        [vaults(chain="base", exposure="multi", min_tvl_usd=2e7)],
    ),
    Row(
        "active vaults only with security score above 70 and max risk medium",
        [vaults(min_security_score=70.0, max_risk_rating="medium")],
    ),
]

TABLE = (
    SEVERAL_CONDITIONS
    + LOOKS_LIKE_A_SYMBOL
    + DROPPED_CONDITIONS
    + MULTI_STEP
    + WALLETS_AND_NAMES
    + QUOTED_APY
    + OTHERS
)
TOKEN_HIT = re.compile(r"^\d+\. .*?\(([A-Za-z0-9.$_-]{1,20})\):", re.MULTILINE)


def _resolve(expected: dict[str, Any], turn: Turn) -> dict[str, Any]:
    main = "\n".join(turn.results_of("main"))
    ids = [row.vault_id for row in vault_rows(main)]
    symbols = TOKEN_HIT.findall(main)
    values = {
        FIRST: ids[0] if ids else None,
        SECOND: ids[1] if len(ids) > 1 else None,
        TOP_SYMBOL: symbols[0] if symbols else None,
    }
    return {k: values.get(v, v) if isinstance(v, str) else v for k, v in expected.items()}


def test_the_table_is_big_enough_and_fresh() -> None:
    from evals.cases import load_cases

    questions = [row.question for row in TABLE]
    assert len(questions) >= 60 and len(set(questions)) == len(questions)
    eval_questions = {case.question.lower() for case in load_cases()}
    assert not [q for q in questions if q.lower() in eval_questions]


@ON_MODULE_LOOP
@pytest.mark.parametrize("row", TABLE, ids=[row.question[:60] for row in TABLE])
async def test_a_fresh_phrasing_gets_the_calls_it_needs(row: Row, tools: World) -> None:
    turn = await tools.ask(row.question)
    lookups = turn.step_calls("lookup")
    assert {tool for tool, _ in lookups} <= LOOKUP_TOOLS, lookups
    assert turn.step_calls("main") == row.calls
    expected_then = [(tool, _resolve(args, turn)) for tool, args in row.then]
    assert turn.step_calls("follow") == expected_then
    assert len(turn.calls) == len(lookups) + len(row.calls) + len(row.then)
    assert turn.finish == "stop" and turn.answer.startswith(LABEL)
    for phrase in row.says:
        assert phrase in turn.answer, turn.answer


@ON_MODULE_LOOP
async def test_a_warm_planner_asks_the_index_once_per_name(tools: World) -> None:
    planner = DemoPlanner()
    cold = await tools.ask("USDe yields on ethereum", planner)
    warm = await tools.ask("USDe vaults on base with TVL over 1M", planner)
    assert cold.step_calls("lookup") and not warm.step_calls("lookup")
    assert cold.step_calls("main") == [vaults(chain="ethereum", asset_symbol="USDE")]
    assert warm.step_calls("main") == [vaults(chain="base", asset_symbol="USDE", min_tvl_usd=1e6)]
