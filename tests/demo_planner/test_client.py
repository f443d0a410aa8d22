"""The planner as a model client: steps of a plan, what it says, what it never does.

Tool results here are written in the real tools' formats (the table test in
`test_phrasings.py` runs the same plans against the real tools).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.tools.base import ToolSpec
from demo_planner import LABEL, DemoPlanner
from demo_planner.rendering import RESULT_CHARS

CATALOGUE = (
    "3 protocols (by indexed TVL):\n"
    "- aave-v3: 12 vaults on ethereum, base; TVL $1.00B; median APY 4.00%; avg security 80\n"
    "- curve-dex: 40 vaults on ethereum; TVL $500.00M; median APY 3.00%; avg security 75\n"
    "- lido: 1 vaults on ethereum; TVL $300.00M; median APY 3.00%; avg security 85"
)
STETH = (
    "1 tokens held by indexed vaults:\n- STETH on ethereum: 8 vaults, TVL $306.21M, best APY 2.97%"
)
NO_ASSET = "No vault holds a token matching 'Lidoo'."
VAULT_LINES = (
    "2 vaults match; page 1 of 1, sorted by tvl_usd.\n"
    "- ETH-STETH [curve-dex on ethereum] assets ETH/STETH; APY 2.12% (base 2.12%, rewards "
    "n/a); TVL $208.90M; security 82/100; risk low; id defillama:ethereum:aaa\n"
    "- STETH [lido on ethereum] assets STETH; APY 2.90% (base 2.90%, rewards n/a); TVL "
    "$100.00M; security 85/100; risk low; id defillama:ethereum:bbb"
)

# A tool's answer: its text, or its text and structured content.
Answer = Callable[[str, dict], str | tuple[str, dict]]


async def run(
    planner: DemoPlanner,
    question: str,
    specs: dict[str, ToolSpec],
    answer: Answer,
    max_steps: int = 5,
) -> tuple[list[ChatToolCall], str]:
    """Drive the planner like the tool loop does, answering calls with `answer`."""
    messages = [ChatMessage(role="user", content=question)]
    calls: list[ChatToolCall] = []
    for step in range(1, max_steps + 1):
        tools = [] if step == max_steps else list(specs.values())
        events = [e async for e in planner.stream(ModelRequest(messages=messages, tools=tools))]
        assert isinstance(events[-1], StepFinished)
        step_calls = [e.call for e in events if isinstance(e, ToolCallRequest)]
        if not step_calls:
            return calls, "".join(e.text for e in events if isinstance(e, TextDelta))
        calls += step_calls
        messages.append(ChatMessage(role="assistant", tool_calls=step_calls))
        for call in step_calls:
            answered = answer(call.name, json.loads(call.arguments))
            text, data = answered if isinstance(answered, tuple) else (answered, None)
            messages.append(
                ChatMessage(
                    role="tool", content=text, tool_call_id=call.id, name=call.name, structured=data
                )
            )
    raise AssertionError("the planner never answered")


def index_answers(name: str, args: dict) -> str:
    if name == "search_protocols":
        return CATALOGUE
    if name == "search_vault_assets":
        return STETH if args["query"].upper() == "STETH" else NO_ASSET
    if name == "search_vaults":
        return VAULT_LINES
    if name == "vault_history":
        return f"History of {args['vault_id']}: 30 daily points."
    return "Error: not expected here"


def shape(calls: list[ChatToolCall]) -> list[tuple[str, str, dict]]:
    return [(c.id.split("_")[1], c.name, json.loads(c.arguments)) for c in calls]


async def test_an_unknown_name_is_looked_up_before_the_search(specs) -> None:
    calls, text = await run(DemoPlanner(), "stETH vaults on ethereum", specs, index_answers)
    assert shape(calls) == [
        ("lookup", "search_protocols", {"limit": 50}),
        ("lookup", "search_vault_assets", {"query": "stETH"}),
        ("main", "search_vaults", {"chain": "ethereum", "asset_symbol": "STETH"}),
    ]
    assert text.startswith(LABEL)
    assert "stETH → asset STETH" in text and "ETH-STETH [curve-dex on ethereum]" in text
    # The catalogue's own figures are not dumped into the answer.
    assert "$1.00B" not in text


async def test_what_one_turn_learned_saves_the_next_turn_its_lookups(specs) -> None:
    planner = DemoPlanner()
    await run(planner, "stETH vaults on ethereum", specs, index_answers)
    calls, _ = await run(planner, "Lido stETH pools with TVL over 10M", specs, index_answers)
    assert shape(calls) == [
        (
            "main",
            "search_vaults",
            {"protocol": "lido", "asset_symbol": "STETH", "min_tvl_usd": 1e7},
        )
    ]


async def test_the_cache_expires(specs) -> None:
    now = [1000.0]
    planner = DemoPlanner(clock=lambda: now[0])
    await run(planner, "stETH vaults", specs, index_answers)
    now[0] += 3600
    calls, _ = await run(planner, "stETH vaults", specs, index_answers)
    assert [step for step, _, _ in shape(calls)][:1] == ["lookup"]


async def test_a_name_the_index_does_not_hold_is_said_not_guessed(specs) -> None:
    calls, text = await run(
        DemoPlanner(), "vaults on Lidoo with APY above 4%", specs, index_answers
    )
    assert shape(calls)[-1] == ("main", "search_vaults", {"min_apy": 4.0})
    assert "“Lidoo”: no asset, protocol or chain of that name in the vault index" in text


async def test_failed_lookups_keep_a_ticker_the_user_wrote(specs) -> None:
    def down(name: str, args: dict) -> str:
        if name in ("search_protocols", "search_vault_assets"):
            return "Error: the vault index is unavailable right now"
        return VAULT_LINES

    calls, text = await run(DemoPlanner(), "stETH vaults", specs, down)
    assert shape(calls)[-1] == ("main", "search_vaults", {"asset_symbol": "STETH"})
    assert "The name lookup (the asset lookup) failed: the vault index is unavailable" in text


async def test_a_condition_that_cannot_be_bound_is_said(specs) -> None:
    calls, text = await run(
        DemoPlanner(), "vaults with IL risk and reward APY share above half", specs, index_answers
    )
    assert shape(calls) == [("main", "search_vaults", {"il_risk": True})]
    assert "Not applied" in text
    assert "“above half” (reward share): the vault search takes only a maximum reward" in text


async def test_a_follow_up_uses_the_id_the_search_returned(specs) -> None:
    calls, text = await run(
        DemoPlanner(), "APY history of the largest stETH vault", specs, index_answers
    )
    assert shape(calls)[-2:] == [
        ("main", "search_vaults", {"asset_symbol": "STETH", "sort_by": "tvl_usd"}),
        ("follow", "vault_history", {"vault_id": "defillama:ethereum:aaa"}),
    ]
    assert "Then, for what that search found first" in text
    assert "History of defillama:ethereum:aaa" in text


async def test_a_follow_up_with_nothing_to_follow_says_so(specs) -> None:
    def empty(name: str, args: dict) -> str:
        if name == "search_vaults":
            return "No vault matches these filters."
        return index_answers(name, args)

    calls, text = await run(DemoPlanner(), "APY history of the largest stETH vault", specs, empty)
    assert [step for step, _, _ in shape(calls)] == ["lookup", "lookup", "main"]
    assert "returned nothing to follow up on, so I did not run the vault history" in text


async def test_the_last_step_answers_even_mid_plan(specs) -> None:
    calls, text = await run(
        DemoPlanner(), "APY history of the largest stETH vault", specs, index_answers, max_steps=2
    )
    assert [step for step, _, _ in shape(calls)] == ["lookup", "lookup"]
    assert text.startswith(LABEL)


async def test_a_quoted_apy_is_answered_with_its_band(specs) -> None:
    guidelines = (
        VAULT_LINES + "\n\n## Yield-versus-risk guidelines\n"
        "- 20–40%: high; usually emissions that can stop, impermanent loss or young protocols."
    )
    calls, text = await run(
        DemoPlanner(), "is a 35% APY on a new farm worth it?", specs, lambda n, a: guidelines
    )
    assert shape(calls) == [("main", "search_vaults", {"min_apy": 20.0, "max_apy": 40.0})]
    assert "You quoted a 35% APY" in text and "20–40%: high; usually emissions" in text


async def test_a_quoted_apy_without_vault_tools_still_gets_its_band(local_specs) -> None:
    calls, text = await run(DemoPlanner(), "is 12% APY sustainable?", local_specs, index_answers)
    assert calls == []
    assert "10–20% — medium" in text and "vault tools are not available" in text


async def test_a_long_result_is_cut_before_its_guidelines_not_through_them(specs) -> None:
    holdings = "".join(
        f"- [ethereum] vault V{i} (yearn-finance, 0x{i:040x}): 1 shares, $1.00, APY 4.07%, "
        "risk high\n"
        for i in range(60)
    )
    guidelines = (
        "\n\n## Yield-versus-risk guidelines\n"
        "- APY below 5%: may not justify the risk; a rated risk for a low yield is rarely "
        "worth it.\n\nHow these results fall:\n- V59: APY 4.07% → below 5% — may not "
        "justify the risk; risk rating high"
    )
    body = "Portfolio of 0x" + "ab" * 20 + ":\n" + holdings + guidelines
    assert len(body) - len(guidelines) > RESULT_CHARS
    _, text = await run(
        DemoPlanner(),
        "is the yield in yield-farmer.eth's portfolio risky?",
        specs,
        lambda n, a: body,
    )
    assert "- [ethereum] vault V0 " in text and "- [ethereum] vault V59 " not in text
    assert "…(more in the tool result)\n\n## Yield-versus-risk guidelines" in text
    assert "V59: APY 4.07% → below 5% — may not justify the risk" in text
    # Without a guidelines section a long result is cut as before.
    _, plain = await run(DemoPlanner(), "What is PEPE?", specs, lambda n, a: "x" * 3000)
    assert "x" * RESULT_CHARS + "\n…(more in the tool result)" in plain
    assert "x" * (RESULT_CHARS + 1) not in plain


@pytest.mark.parametrize(
    "question", ["USDC vaults on base", "best stablecoin yields right now?", "TVL of Aave"]
)
async def test_vault_questions_without_vault_tools_say_so(local_specs, question) -> None:
    calls, text = await run(DemoPlanner(), question, local_specs, index_answers)
    assert calls == [] and "not available" in text


async def test_only_offered_tools_are_called(local_specs) -> None:
    without_feed = {k: v for k, v in local_specs.items() if k != "search_feed"}
    calls, _ = await run(DemoPlanner(), "what is the news about PEPE", without_feed, index_answers)
    assert all(c.name in without_feed for c in calls)
    calls, text = await run(DemoPlanner(), "what is PEPE?", {}, index_answers)
    assert calls == [] and "No tools are available" in text


async def test_unmatched_questions_get_help_not_invention(specs) -> None:
    calls, text = await run(DemoPlanner(), "what is the meaning of life?", specs, index_answers)
    assert calls == [] and LABEL in text and "Try, for example" in text


async def test_a_greeting_gets_a_greeting_not_the_help(specs) -> None:
    calls, text = await run(DemoPlanner(), "hello there", specs, index_answers)
    assert calls == [] and LABEL in text and text.count("\n- “") == 3
    assert "could not match" not in text and "Hi!" in text


async def test_a_failed_tool_is_rendered_as_what_could_not_be_checked(specs) -> None:
    calls, text = await run(
        DemoPlanner(),
        "What is PEPE?",
        specs,
        lambda n, a: "Error: analyze_token timed out after 1 s",
    )
    assert shape(calls) == [("main", "analyze_token", {"symbol": "PEPE"})]
    assert "could not check this" in text and "timed out after 1 s" in text


async def test_a_cut_result_says_the_rest_was_not_checked(specs) -> None:
    body = (
        "Pepe (PEPE) "
        + "x" * 900
        + (
            "\n\n[… result cut: 1,000 of 1,030 characters shown. "
            "The rest was not sent to you; say so if it matters.]"
        )
    )
    _, text = await run(DemoPlanner(), "What is PEPE?", specs, lambda n, a: body)
    assert "was cut before it reached me (result cut: 1,000 of 1,030 characters shown)" in text
    assert "could not check the rest" in text


@pytest.mark.parametrize(
    ("question", "calls"),
    [
        ("What is PEPE?", [("analyze_token", {"symbol": "PEPE"})]),
        ("tell me about $wif", [("analyze_token", {"symbol": "WIF"})]),
        (
            "Compare PEPE and SHIB",
            [("analyze_token", {"symbol": "PEPE"}), ("analyze_token", {"symbol": "SHIB"})],
        ),
        ("what's the market cap of MKR right now", [("analyze_token", {"symbol": "MKR"})]),
        ("What is the market saying about Aave?", [("search_feed", {"query": "Aave"})]),
        ("any news on the Bybit hack?", [("search_feed", {"query": "Bybit hack"})]),
        (
            "Is 0xdAC17F958D2ee523a2206206994597C13D831ec7 risky?",
            [("analyze_address", {"address": "0xdAC17F958D2ee523a2206206994597C13D831ec7"})],
        ),
        (
            "How risky is vault defillama:base:10137e20-efbc-4e15-a733-17ecb52c48e8?",
            [("analyze_risk", {"vault_id": "defillama:base:10137e20-efbc-4e15-a733-17ecb52c48e8"})],
        ),
        (
            "tokens over $1M market cap ranked by token ranking, page 2",
            [("search_tokens", {"min_market_cap_usd": 1e6, "sort_by": "rank", "page": 2})],
        ),
    ],
)
async def test_single_step_routes(specs, question, calls) -> None:
    made, _ = await run(DemoPlanner(), question, specs, lambda n, a: "ok")
    assert [(c.name, json.loads(c.arguments)) for c in made] == calls
