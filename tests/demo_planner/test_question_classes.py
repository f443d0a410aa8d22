"""Questions read by their structure, by class, through real tools and the real tool loop.

Each class has several phrasings of its own (none from `evals/cases/`): negated lists,
questions in parts, time windows and trends, amounts with a risk level, comparisons, token
contract addresses, exploits, what no tool can do, and small talk. For each, the main calls
must be exactly these (lookups of names may come first), the follow-ups must use what the
main calls returned, and the answer must say what is listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

import pytest

from demo_planner import LABEL, DemoPlanner
from demo_planner.vault_table import vault_rows
from tests.demo_planner.world import Turn, World

ON_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
FIRST = "$first_vault_id"
SECOND = "$second_vault_id"
LOOKUP_TOOLS = {"search_protocols", "search_vault_assets"}
# The day "since August" is counted to in these tests.
TODAY = date(2026, 12, 7)

AAVE = ["aave-v3", "aave-v4"]
CURVE = ["curve-dex", "curve-llamalend"]
PANCAKE = {"protocol": "pancakeswap-amm", "protocols": ["pancakeswap-amm-v3"]}
PEPE_ADDRESS = "0x6982508145454Ce325dDbE47a25d4ec3d2311933"
USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDT_ADDRESS = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
NOBODY = "0x2222222222222222222222222222222222222222"
COMPARED = {"exposure": "single", "sort_by": "apy", "min_tvl_usd": 1e6}


@dataclass(frozen=True)
class Row:
    """A question, the main calls it needs, the follow-ups, and what the answer must say."""

    question: str
    calls: list[tuple[str, dict[str, Any]]]
    then: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    says: tuple[str, ...] = ()
    never: tuple[str, ...] = ()


def vaults(**args: Any) -> tuple[str, dict[str, Any]]:
    return ("search_vaults", args)


def largest(protocol: str) -> tuple[str, dict[str, Any]]:
    return vaults(protocol=protocol, sort_by="tvl_usd", per_page=1)


NEGATION = [
    Row(
        "stablecoin yields not on arbitrum or optimism",
        [vaults(stablecoin_only=True, exclude_chains=["arbitrum", "optimism"])],
    ),
    Row("anything but Aave for DAI", [vaults(exclude_protocols=AAVE, asset_symbol="DAI")]),
    Row(
        "USDT pools without Morpho/Euler",
        [vaults(exclude_protocols=["morpho-blue", "euler-v2"], asset_symbol="USDT")],
    ),
    Row("skip unaudited, show vaults on base", [vaults(chain="base", audited=True)]),
    Row(
        "ETH yields from protocols that hasnt been hacked",
        [vaults(asset_symbol="ETH")],
        says=("no tool filters by exploit history",),
    ),
    Row(
        "lending vaults that havent been audited on ethereum",
        [vaults(chain="ethereum", audited=False)],
    ),
    Row(
        "WBTC vaults, excluding curve, convex and yearn",
        [
            vaults(
                exclude_protocols=[*CURVE, "convex-finance", "yearn-finance"],
                asset_symbol="WBTC",
            )
        ],
    ),
    Row(
        "I don't want Lido, best ETH yields",
        [vaults(sort_by="apy", exclude_protocols=["lido"], asset_symbol="ETH")],
    ),
    Row(
        "avoid mode and base, USDC vaults above 5%",
        [vaults(exclude_chains=["mode", "base"], asset_symbol="USDC", min_apy=5.0)],
    ),
    Row(
        "vaults on arbitrum that are not high risk",
        [vaults(chain="arbitrum", max_risk_rating="medium")],
    ),
    Row("USDC vaults but no LPs", [vaults(exposure="single", asset_symbol="USDC")]),
    Row("vaults with no rewards on base", [vaults(chain="base", max_reward_share=0.0)]),
]

PARTS = [
    Row(
        "what's the news on aave and what are its best usdc vaults?",
        [
            ("search_feed", {"query": "aave"}),
            vaults(protocol="aave-v3", protocols=["aave-v4"], asset_symbol="USDC", sort_by="apy"),
        ],
    ),
    Row(
        "what's UNI trading at, and any news on it?",
        [("analyze_token", {"symbol": "UNI"}), ("search_feed", {"query": "UNI"})],
        says=("**1. “what's UNI trading at”**", "**2. “any news on it?”**"),
    ),
    Row(
        "show me the top stablecoin yields on base, and what's the price of PEPE?",
        [
            ("top_yields", {"chain": "base", "stablecoin_only": True}),
            ("analyze_token", {"symbol": "PEPE"}),
        ],
    ),
    Row(
        "Tell me about LINK. Any headlines?",
        [("analyze_token", {"symbol": "LINK"}), ("search_feed", {"query": "LINK"})],
    ),
    Row(
        "How much does the Syrup USDC vault pay and is it audited?",
        [vaults(query="Syrup USDC")],
        then=[("analyze_risk", {"vault_id": FIRST})],
        says=("What you asked, from the risk analysis", "Audits"),
    ),
    Row(
        "Find the best WBTC vault and tell me how risky it is",
        [("top_yields", {"asset_symbol": "WBTC"})],
        then=[("analyze_risk", {"vault_id": FIRST})],
    ),
]

TIME = [
    Row(
        "how did yields on the syrup usdc vault move over 60 days",
        [vaults(query="syrup usdc")],
        then=[("vault_history", {"vault_id": FIRST, "days": 60})],
    ),
    Row(
        "how has the pancakeswap USDC-STG pool on ethereum done over the past month?",
        [vaults(chain="ethereum", query="USDC-STG", **PANCAKE)],
        then=[("vault_history", {"vault_id": FIRST, "days": 30})],
        says=("Trend of USDC-STG",),
    ),
    Row(
        "is the USDC-STG pool on ethereum rising or falling?",
        [vaults(chain="ethereum", query="USDC-STG")],
        then=[("vault_history", {"vault_id": FIRST})],
        says=("the APY is going",),
    ),
    Row(
        "how has the DAI-USDC pool on ethereum done since 2024?",
        [vaults(chain="ethereum", query="DAI-USDC")],
        then=[("vault_history", {"vault_id": FIRST, "days": 365})],
        says=("Read “since 2024” as the last 365 days.", "goes back at most 365 days"),
    ),
    Row(
        "the Syrup USDT vault's APY, past 10 days",
        [vaults(query="Syrup USDT")],
        then=[("vault_history", {"vault_id": FIRST, "days": 10})],
    ),
    Row(
        "PEPE over the last two weeks",
        [("analyze_token", {"symbol": "PEPE"})],
        says=("“over the last two weeks”:", "cannot look back over a time window"),
    ),
    Row(
        "tokens that pumped 20% over the last month",
        [("search_tokens", {"min_price_change_pct": 20.0, "price_change_window": "24h"})],
        says=("“over the last month”: price changes have windows of 1h, 24h and 7d only",),
    ),
    Row(
        "tokens that gained the most this week",
        [("search_tokens", {"sort_by": "price_change_7d"})],
        never=("not applied",),
    ),
]

AMOUNTS = [
    Row(
        "need somewhere for 20k usdc on arbitrum, no ponzis",
        [
            vaults(
                chain="arbitrum",
                asset_symbol="USDC",
                max_risk_rating="medium",
                exposure="single",
                sort_by="apy",
            )
        ],
        says=("Read “20k usdc” as the amount", "Read “no ponzis” as a risk rating"),
    ),
    Row(
        "I have 30k USDT sitting idle, any ideas? nothing sketchy",
        [vaults(asset_symbol="USDT", max_risk_rating="medium", exposure="single", sort_by="apy")],
        says=("Read “30k USDT” as the amount", "at most medium", "**Sizing:**"),
    ),
    Row(
        "got 500k in stables, want something conservative",
        [vaults(stablecoin_only=True, max_risk_rating="low", sort_by="apy")],
        says=("position size", "at most low"),
    ),
    Row(
        "where would you park 3 WETH?",
        [vaults(asset_symbol="WETH", exposure="single", sort_by="apy")],
        says=("no price for WETH",),
    ),
    Row(
        "with $20k, what are the best USDC vaults on base with TVL over 10M?",
        [
            vaults(
                chain="base",
                asset_symbol="USDC",
                min_tvl_usd=1e7,
                exposure="single",
                sort_by="apy",
            )
        ],
        says=("Read “$20k” as the amount",),
    ),
]

COMPARISONS = [
    Row(
        "sUSDe or USDe, which pays better on ethereum?",
        [
            vaults(chain="ethereum", asset_symbol="SUSDE"),
            vaults(chain="ethereum", asset_symbol="USDE"),
        ],
        says=("**Verdict:** sUSDe pays more for yield", "for USDe"),
    ),
    Row(
        "DAI yields: ethereum or base?",
        [
            vaults(asset_symbol="DAI", chain="ethereum", **COMPARED),
            vaults(asset_symbol="DAI", chain="base", **COMPARED),
        ],
        says=("**Verdict:**",),
    ),
    Row(
        "optimism vs arbitrum for stablecoin yields",
        [
            vaults(stablecoin_only=True, chain="optimism", sort_by="apy", min_tvl_usd=1e6),
            vaults(stablecoin_only=True, chain="arbitrum", sort_by="apy", min_tvl_usd=1e6),
        ],
        says=("**Verdict:**", "pays more"),
    ),
    Row(
        "where's USDC better, polygon, base or arbitrum?",
        [
            vaults(asset_symbol="USDC", chain="polygon", **COMPARED),
            vaults(asset_symbol="USDC", chain="base", **COMPARED),
            vaults(asset_symbol="USDC", chain="arbitrum", **COMPARED),
        ],
        says=("**Verdict:**",),
    ),
    Row(
        "which is better for stablecoins: base, arbitrum, or optimism?",
        [
            vaults(stablecoin_only=True, chain=c, sort_by="apy", min_tvl_usd=1e6)
            for c in ("base", "arbitrum", "optimism")
        ],
        says=("**Verdict:**",),
    ),
    Row(
        "is Morpho better than Aave for USDC?",
        [
            vaults(protocol="morpho-blue", asset_symbol="USDC"),
            vaults(protocol="aave-v3", protocols=["aave-v4"], asset_symbol="USDC"),
        ],
        says=("**Verdict:**", "USDC yield"),
    ),
]

ADDRESSES = [
    Row(
        f"what's {PEPE_ADDRESS} trading at?",
        [("analyze_token", {"chain": "ethereum", "address": PEPE_ADDRESS})],
    ),
    Row(
        f"{USDC_BASE} on base, what is it?",
        [("analyze_token", {"chain": "base", "address": USDC_BASE})],
    ),
    Row(
        f"tell me about {USDT_ADDRESS}",
        [("analyze_address", {"address": USDT_ADDRESS})],
        then=[("analyze_token", {"chain": "ethereum", "address": USDT_ADDRESS})],
        never=("Then, for what that search found first",),
    ),
    Row(
        f"is {NOBODY} a legit token?",
        [("analyze_token", {"chain": "ethereum", "address": NOBODY})],
        then=[("analyze_address", {"address": NOBODY})],
        says=("No token is on record at",),
        never=("could not answer",),
    ),
]

EXPLOITS = [
    Row(
        "has Morpho ever been exploited?",
        [largest("morpho-blue"), ("search_feed", {"query": "Morpho exploit"})],
        then=[("analyze_risk", {"vault_id": FIRST})],
        says=("**morpho-blue:**", "records no exploit"),
    ),
    Row(
        "was aave hacked",
        [largest("aave-v3"), largest("aave-v4"), ("search_feed", {"query": "aave hack"})],
        then=[("analyze_risk", {"vault_id": FIRST}), ("analyze_risk", {"vault_id": SECOND})],
        says=("**aave-v3:**", "records 1 exploit"),
    ),
    Row(
        "Euler got hacked in 2023 right?",
        [largest("euler-v2"), ("search_feed", {"query": "Euler hack"})],
        then=[("analyze_risk", {"vault_id": FIRST})],
        says=("**euler-v2:**",),
    ),
    Row(
        "did Ronin get drained?",
        [("search_feed", {"query": "Ronin hack"})],
        says=("no protocol of that name in the vault index",),
    ),
    Row(
        "any news on the Euler exploit?",
        [("search_feed", {"query": "Euler exploit"})],
    ),
]

LIMITS = [
    Row("will usdc depeg?", [("analyze_token", {"symbol": "USDC"})], says=("can't predict",)),
    Row("swap 2 ETH for USDC please", [], says=("can't make transactions", "“What is ETH")),
    Row(
        "will LINK reach $20 this year?",
        [("analyze_token", {"symbol": "LINK"})],
        says=("can't predict",),
    ),
    Row("how high are gas fees right now", [], says=("no gas price data",)),
    Row(
        "remind me when PEPE pumps",
        [("analyze_token", {"symbol": "PEPE"})],
        says=("can't set alerts",),
    ),
    Row(
        "can you deposit my USDC into the best vault?",
        [("top_yields", {"asset_symbol": "USDC"})],
        says=("can't deposit",),
    ),
]

SMALL_TALK = [
    Row("cheers, that was useful", [], says=("Glad to help",)),
    Row("hey!", [], says=("Hi!",)),
    Row("what are you?", [], says=("I can look up",)),
    Row("bye for now", [], says=("Bye for now",)),
    Row("lol ok", [], says=("Anything else",)),
]

TABLE = NEGATION + PARTS + TIME + AMOUNTS + COMPARISONS + ADDRESSES + EXPLOITS + LIMITS + SMALL_TALK


def _resolve(expected: dict[str, Any], turn: Turn) -> dict[str, Any]:
    main = turn.results_of("main")
    ids = [row.vault_id for text in main for row in vault_rows(text)]
    values = {FIRST: ids[0] if ids else None, SECOND: ids[1] if len(ids) > 1 else None}
    return {k: values.get(v, v) if isinstance(v, str) else v for k, v in expected.items()}


def test_the_classes_have_several_fresh_phrasings_each() -> None:
    from evals.cases import load_cases

    for rows in (NEGATION, PARTS, TIME, AMOUNTS, COMPARISONS, ADDRESSES, EXPLOITS, LIMITS):
        assert len(rows) >= 4
    questions = [row.question.lower() for row in TABLE]
    assert len(set(questions)) == len(questions)
    assert not set(questions) & {case.question.lower() for case in load_cases()}


@ON_MODULE_LOOP
@pytest.mark.parametrize("row", TABLE, ids=[row.question[:60] for row in TABLE])
async def test_a_question_read_by_its_structure_gets_the_calls_it_needs(
    row: Row, tools: World
) -> None:
    turn = await tools.ask(row.question, DemoPlanner(today=lambda: TODAY))
    lookups = turn.step_calls("lookup")
    assert {tool for tool, _ in lookups} <= LOOKUP_TOOLS, lookups
    assert turn.step_calls("main") == row.calls
    assert turn.step_calls("follow") == [(tool, _resolve(a, turn)) for tool, a in row.then]
    assert turn.finish == "stop" and turn.answer.startswith(LABEL)
    assert "could not match" not in turn.answer
    for phrase in row.says:
        assert phrase in turn.answer, turn.answer
    for phrase in row.never:
        assert phrase not in turn.answer, turn.answer


@ON_MODULE_LOOP
async def test_since_a_month_is_counted_to_today(tools: World) -> None:
    planner = DemoPlanner(today=lambda: TODAY)
    turn = await tools.ask(
        "how has the pancakeswap DAI-USDC pool on ethereum done since August?", planner
    )
    # 1 August to 7 December 2026, both days counted.
    assert turn.step_calls("follow") == [("vault_history", {"vault_id": _first(turn), "days": 129})]
    assert "Read “since August” as the last 129 days." in turn.answer
    assert "**Trend of DAI-USDC (0.01%):** the APY is going" in turn.answer


def _first(turn: Turn) -> str:
    return vault_rows("\n".join(turn.results_of("main")))[0].vault_id
