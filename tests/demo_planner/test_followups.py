"""Follow-up questions through the real tool loop, in one thread, against the real tools.

Each row is a conversation: the user messages in order, then the exact main calls of every
turn. A refinement ("and on base?", "top 3", "what about Morpho?") must be planned as the
previous (resolved) question with its parts applied, and its answer must say how it was
read; a message that stands on its own, or says nothing to refine ("thanks", "why?"), must
be read as it would be alone and never repeat the previous plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from demo_planner import LABEL
from demo_planner.followups import is_acknowledgement
from demo_planner.vault_table import read_page
from tests.demo_planner.test_phrasings import AAVE
from tests.demo_planner.world import World

ON_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
LOOKUP_TOOLS = {"search_protocols", "search_vault_assets"}
WALLET = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045"
OTHER_WALLET = "0x28C6c06298d514Db089934071355E5743bf21d60"

Calls = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Talk:
    """User messages in one thread, the main calls of each turn, what the last answer says."""

    messages: list[str]
    calls: list[Calls]
    says: tuple[str, ...] = ()
    not_says: tuple[str, ...] = ()


def vaults(**args: Any) -> tuple[str, dict[str, Any]]:
    return ("search_vaults", args)


def tokens(**args: Any) -> tuple[str, dict[str, Any]]:
    return ("search_tokens", args)


STABLE_5M = vaults(stablecoin_only=True, min_tvl_usd=5e6)

REFINEMENTS = [
    Talk(
        ["USDC vaults on ethereum", "only the ones above 5%"],
        [
            [vaults(chain="ethereum", asset_symbol="USDC")],
            [vaults(chain="ethereum", asset_symbol="USDC", min_apy=5.0)],
        ],
        says=("Taking",),
    ),
    Talk(
        ["stablecoin vaults on base", "just the ones paying more than 4%"],
        [
            [vaults(chain="base", stablecoin_only=True)],
            [vaults(chain="base", stablecoin_only=True, min_apy=4.0)],
        ],
        says=("Taking",),
    ),
    Talk(
        ["USDC vaults on ethereum", "next page"],
        [
            [vaults(chain="ethereum", asset_symbol="USDC")],
            [vaults(chain="ethereum", asset_symbol="USDC", page=2)],
        ],
    ),
    Talk(
        ["USDC vaults on ethereum", "show me more", "and the next ones"],
        [
            [vaults(chain="ethereum", asset_symbol="USDC")],
            [vaults(chain="ethereum", asset_symbol="USDC", page=2)],
            [vaults(chain="ethereum", asset_symbol="USDC", page=3)],
        ],
    ),
    Talk(
        ["USDC vaults on ethereum", "just the audited ones"],
        [
            [vaults(chain="ethereum", asset_symbol="USDC")],
            [vaults(chain="ethereum", asset_symbol="USDC", audited=True)],
        ],
    ),
    Talk(
        ["USDC vaults on ethereum", "keep only the ones with TVL above 100M"],
        [
            [vaults(chain="ethereum", asset_symbol="USDC")],
            [vaults(chain="ethereum", asset_symbol="USDC", min_tvl_usd=1e8)],
        ],
    ),
    Talk(
        ["tokens on ethereum", "next 10"],
        [
            [("search_tokens", {"chain": "ethereum"})],
            [("search_tokens", {"chain": "ethereum", "page": 2})],
        ],
    ),
    Talk(
        ["tokens with market cap over 1B", "page 3", "previous page"],
        [
            [("search_tokens", {"min_market_cap_usd": 1e9})],
            [("search_tokens", {"min_market_cap_usd": 1e9, "page": 3})],
            [("search_tokens", {"min_market_cap_usd": 1e9, "page": 2})],
        ],
    ),
    Talk(
        ["stablecoin vaults with TVL above $5M", "and on base?"],
        [[STABLE_5M], [vaults(chain="base", stablecoin_only=True, min_tvl_usd=5e6)]],
        says=(
            "Taking “stablecoin vaults with TVL above $5M” from your previous question, "
            "with “on base” added",
        ),
    ),
    Talk(
        ["USDC vaults on arbitrum with TVL over $10M", "what about on Base?"],
        [
            [vaults(chain="arbitrum", asset_symbol="USDC", min_tvl_usd=1e7)],
            [vaults(chain="base", asset_symbol="USDC", min_tvl_usd=1e7)],
        ],
        says=("“on Base” instead of “on arbitrum”",),
    ),
    Talk(
        ["stablecoin vaults with TVL above $5M", "only above 10% apy"],
        [[STABLE_5M], [vaults(stablecoin_only=True, min_tvl_usd=5e6, min_apy=10.0)]],
    ),
    Talk(
        ["USDC vaults with APY above 5%", "only above 10%"],
        [
            [vaults(asset_symbol="USDC", min_apy=5.0)],
            [vaults(asset_symbol="USDC", min_apy=10.0)],
        ],
        says=("“above 10%” instead of “APY above 5%”",),
    ),
    Talk(
        ["Aave vaults for USDC on ethereum", "what about Morpho?"],
        [
            [vaults(chain="ethereum", **AAVE, asset_symbol="USDC")],
            [vaults(chain="ethereum", protocol="morpho-blue", asset_symbol="USDC")],
        ],
    ),
    Talk(
        ["aave vaults for USDC", "how about morpho"],
        [
            [vaults(**AAVE, asset_symbol="USDC")],
            [vaults(protocol="morpho-blue", asset_symbol="USDC")],
        ],
        says=("“morpho” instead of “aave”",),
    ),
    Talk(
        ["USDC vaults with APY above 5% on ethereum", "between 8 and 12% not on ethereum"],
        [
            [vaults(chain="ethereum", asset_symbol="USDC", min_apy=5.0)],
            [vaults(exclude_chains=["ethereum"], asset_symbol="USDC", min_apy=8.0, max_apy=12.0)],
        ],
    ),
    Talk(
        ["stablecoin vaults with TVL above $5M sorted by apy", "sorted by tvl instead"],
        [
            [vaults(stablecoin_only=True, min_tvl_usd=5e6, sort_by="apy")],
            [vaults(stablecoin_only=True, min_tvl_usd=5e6, sort_by="tvl_usd")],
        ],
    ),
    Talk(
        ["stablecoin vaults on ethereum", "top 3"],
        [
            [vaults(chain="ethereum", stablecoin_only=True)],
            # Read as "stablecoin vaults on ethereum, top 3", as one sentence would be.
            [("top_yields", {"chain": "ethereum", "stablecoin_only": True, "limit": 3})],
        ],
        says=("with “top 3” added. Read as: “stablecoin vaults on ethereum, top 3”",),
    ),
    Talk(
        ["USDC vaults on arbitrum with TVL over $10M", "same for USDT"],
        [
            [vaults(chain="arbitrum", asset_symbol="USDC", min_tvl_usd=1e7)],
            [vaults(chain="arbitrum", asset_symbol="USDT", min_tvl_usd=1e7)],
        ],
    ),
    Talk(
        ["top 5 positions by value for nick.eth", "and for vitalik.eth?"],
        [
            [("wallet_top_positions", {"address": "nick.eth", "limit": 5})],
            [("wallet_top_positions", {"address": "vitalik.eth", "limit": 5})],
        ],
    ),
    Talk(
        [f"positions above $500 for {OTHER_WALLET}", f"and {WALLET}?"],
        [
            [("wallet_positions", {"address": OTHER_WALLET, "min_value_usd": 500.0})],
            [("wallet_positions", {"address": WALLET, "min_value_usd": 500.0})],
        ],
    ),
    Talk(
        ["tokens with market cap over 1B on ethereum", "and on solana, under 5M liquidity"],
        [
            [tokens(chain="ethereum", min_market_cap_usd=1e9)],
            [tokens(chain="solana", min_market_cap_usd=1e9, max_liquidity_usd=5e6)],
        ],
    ),
]

CHAINS = [
    Talk(
        ["stablecoin vaults with TVL above $5M", "and on base?", "only above 10% apy", "top 3"],
        [
            [STABLE_5M],
            [vaults(chain="base", stablecoin_only=True, min_tvl_usd=5e6)],
            [vaults(chain="base", stablecoin_only=True, min_tvl_usd=5e6, min_apy=10.0)],
            [
                vaults(
                    chain="base",
                    stablecoin_only=True,
                    min_tvl_usd=5e6,
                    min_apy=10.0,
                    sort_by="apy",
                    per_page=3,
                )
            ],
        ],
        says=("Taking “stablecoin vaults with TVL above $5M on base, above 10% apy”",),
    ),
]

USDC_SIDE = {"asset_symbol": "USDC", "exposure": "single", "sort_by": "apy", "min_tvl_usd": 1e6}
STG = {
    "chain": "ethereum",
    "query": "USDC-STG",
    "protocol": "pancakeswap-amm",
    "protocols": ["pancakeswap-amm-v3"],
}

# Refinements of the questions read by their structure.
STRUCTURED = [
    Talk(
        # A chain after a comparison of chains is one more side, not a replacement.
        ["is USDC yield better on arbitrum or base?", "and optimism?"],
        [
            [vaults(chain="arbitrum", **USDC_SIDE), vaults(chain="base", **USDC_SIDE)],
            [
                vaults(chain="arbitrum", **USDC_SIDE),
                vaults(chain="base", **USDC_SIDE),
                vaults(chain="optimism", **USDC_SIDE),
            ],
        ],
        says=("added as one more side", "**Verdict:**"),
    ),
    Talk(
        # A new window takes the place of the old one, the history is asked again.
        [
            "how has the pancakeswap USDC-STG pool on ethereum done over the past month?",
            "and over the last week?",
        ],
        [[vaults(**STG)], [vaults(**STG)]],
        says=("“over the last week” instead of “over the past month”", "Trend of USDC-STG"),
    ),
    Talk(
        ["has Euler been hacked?", "what about Morpho?"],
        [
            [
                vaults(protocol="euler-v2", sort_by="tvl_usd", per_page=1),
                ("search_feed", {"query": "Euler hack"}),
            ],
            [
                vaults(protocol="morpho-blue", sort_by="tvl_usd", per_page=1),
                ("search_feed", {"query": "Morpho hack"}),
            ],
        ],
        says=("**morpho-blue:**",),
    ),
    Talk(
        ["I have 50k USDC, where should I put it? nothing sketchy", "only on base"],
        [
            [
                vaults(
                    asset_symbol="USDC", max_risk_rating="medium", exposure="single", sort_by="apy"
                )
            ],
            [
                vaults(
                    chain="base",
                    asset_symbol="USDC",
                    max_risk_rating="medium",
                    exposure="single",
                    sort_by="apy",
                )
            ],
        ],
        says=("Read “50k USDC” as the amount",),
    ),
    Talk(
        ["what's ETH trading at and any news on it?", "cheers, legend"],
        [[("analyze_token", {"symbol": "ETH"}), ("search_feed", {"query": "ETH"})], []],
        says=("Glad to help",),
        not_says=("Taking", "could not match"),
    ),
]

NOT_REFINEMENTS = [
    Talk(
        ["stablecoin vaults with TVL above $5M", "thanks"],
        [[STABLE_5M], []],
        says=("Glad to help", "To change your previous question"),
        not_says=("Taking", "Try, for example"),
    ),
    Talk(["stablecoin vaults with TVL above $5M", "why?"], [[STABLE_5M], []], not_says=("Taking",)),
    Talk(["stablecoin vaults with TVL above $5M", "ok"], [[STABLE_5M], []], not_says=("Taking",)),
    Talk(
        ["stablecoin vaults with TVL above $5M", "USDC vaults on base"],
        [[STABLE_5M], [vaults(chain="base", asset_symbol="USDC")]],
        not_says=("Taking",),
    ),
    Talk(
        ["stablecoin vaults with TVL above $5M", "tokens with market cap over 1B"],
        [[STABLE_5M], [tokens(min_market_cap_usd=1e9)]],
        not_says=("Taking",),
    ),
    Talk(
        ["USDC vaults on base", "What's in vitalik.eth's wallet?"],
        [
            [vaults(chain="base", asset_symbol="USDC")],
            [("wallet_portfolio", {"address": "vitalik.eth"})],
        ],
        not_says=("Taking",),
    ),
    Talk(
        ["USDC vaults on base", "and for vitalik.eth?"],
        [
            [vaults(chain="base", asset_symbol="USDC")],
            [("wallet_portfolio", {"address": "vitalik.eth"})],
        ],
        not_says=("Taking",),
    ),
    Talk(
        # A protocol's TVL asked after a vault search is its own question.
        ["stablecoin vaults with TVL above $5M", "TVL of Pendle"],
        [[STABLE_5M], [("search_protocols", {"query": "pendle"})]],
        not_says=("Taking",),
    ),
    Talk(
        # "yields" is a subject of its own, though it also names the APY field.
        ["stablecoin vaults with TVL above $5M", "yields over 15% on arbitrum"],
        [[STABLE_5M], [vaults(chain="arbitrum", min_apy=15.0)]],
        not_says=("Taking",),
    ),
    Talk(
        # The wallet tools filter by no asset, so an asset after a wallet question is asked
        # about on its own.
        ["top 5 positions by value for nick.eth", "What about ETH?"],
        [
            [("wallet_top_positions", {"address": "nick.eth", "limit": 5})],
            [("analyze_token", {"symbol": "ETH"})],
        ],
        not_says=("Taking",),
    ),
    # Nothing answerable came before, so there is nothing to refine.
    Talk(["thanks", "and on base?"], [[], []], not_says=("Taking",)),
]

TABLE = REFINEMENTS + CHAINS + STRUCTURED + NOT_REFINEMENTS


@ON_MODULE_LOOP
@pytest.mark.parametrize("talk", TABLE, ids=[" / ".join(t.messages)[:70] for t in TABLE])
async def test_a_conversation_gets_the_calls_each_turn_needs(talk: Talk, tools: World) -> None:
    turns = await tools.converse(talk.messages)
    for turn, expected in zip(turns, talk.calls, strict=True):
        lookups = turn.step_calls("lookup")
        assert {tool for tool, _ in lookups} <= LOOKUP_TOOLS, lookups
        assert turn.step_calls("main") == expected, turn.question
        assert turn.finish == "stop" and turn.answer.startswith(LABEL)
    last = turns[-1].answer
    for phrase in talk.says:
        assert phrase in last, last
    for phrase in talk.not_says:
        assert phrase not in last, last


@pytest.mark.parametrize(
    ("message", "thanks"),
    [
        ("thanks", True),
        ("Thanks, that's helpful!", True),
        ("thank you so much.", True),
        ("ok great", True),
        ("cool, thx!", True),
        ("Thanks — great", True),
        ("ok?", False),  # a question
        ("why?", False),
        ("that is", False),  # thanks nobody
        ("thanks, and on base?", False),  # asks for more
        ("thanks 0x12", False),
        ("top 3", False),
        ("", False),
    ],
)
def test_only_a_message_that_thanks_or_agrees_is_an_acknowledgement(
    message: str, thanks: bool
) -> None:
    assert is_acknowledgement(message) is thanks


@ON_MODULE_LOOP
async def test_a_question_that_points_into_earlier_results_names_that_vault(
    tools: World,
) -> None:
    turns = await tools.converse(
        [
            "USDC vaults on base",
            "how risky is the first one?",
            "and the second one's history?",
            "where does the yield of the last one come from?",
            "what is the market saying about Aave and is it growing?",
        ]
    )
    [listed] = turns[0].results_of("main")
    page = read_page(listed)
    assert page is not None and len(page.rows) >= 3
    rows = page.rows
    # Each points into the first turn's results, also after a turn that listed none.
    assert turns[1].step_calls("main") == [("analyze_risk", {"vault_id": rows[0].vault_id})]
    assert turns[2].step_calls("main") == [("vault_history", {"vault_id": rows[1].vault_id})]
    assert turns[3].step_calls("main") == [("analyze_yield", {"vault_id": rows[-1].vault_id})]
    assert f"Reading “the first one” as {rows[0].name} from earlier results" in turns[1].answer
    # A longer question's "it" is its own: nothing is pointed at.
    assert all("vault_id" not in args for _, args in turns[4].step_calls("main"))
