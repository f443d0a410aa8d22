"""A result the chat draws as a card gets one lead sentence in the planner's answer, in
plain words: the card holds the table, the figures and the guidelines.

The questions run against the real tools (the vault server over MCP, with its structured
content kept as the project's MCP connection keeps it); the wallet, which needs a chain,
is answered with a wallet tool's structured content written out here.
"""

from __future__ import annotations

import json
import re

import pytest

from albert.ai.model import ChatMessage, ChatToolCall, ModelRequest, TextDelta
from demo_planner import LABEL, DemoPlanner
from demo_planner.leads import lead
from tests.demo_planner.world import World

ON_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")

# What an answer's own words must not carry: an index id, a parameter or tool name, a
# repository path, a table or the model-facing guidelines.
INTERNAL = re.compile(
    r"\b[a-z]+:[a-z0-9-]+:[0-9a-fx-]{8,}|\b[a-z]+_[a-z0-9_]+\b|\w=\S|data_server/"
    r"|\| --- \||Yield-versus-risk guidelines|How these results fall|Weigh every yield"
)


def _own_words(answer: str) -> str:
    assert answer.startswith(LABEL), answer
    return answer.removeprefix(LABEL).strip()


@ON_MODULE_LOOP
@pytest.mark.parametrize(
    ("question", "says"),
    [
        ("USDC vaults on base", r"^[\d,]+ vaults match; by highest TVL, \*\*.+\*\* \(.+ on base\)"),
        ("highest yields", r"vaults match; by highest APY, \*\*.+\*\* .* leads with [\d.]+% APY"),
        ("What is PEPE?", r"^\*\*Pepe \(PEPE\)\*\* trades at \$0\.00000799 \(-0\.44% in 24h\)"),
        ("What is the market saying about Aave?", r"the most relevant is “.+” \(.+, \d{4}-"),
        ("top gainers today", r"^Data as of \d{4}-\d{2}-\d{2}: \*\*.+\*\* comes first by 24-hour"),
        (
            "Is 0x47666Fab8bd0Ac7003bce3f5C3585383F09486E2 risky?",
            r"^This address is on record as \*\*.+\*\* \(critical risk\)\.$",
        ),
    ],
)
async def test_a_card_s_result_gets_one_plain_lead_sentence(
    tools: World, question: str, says: str
) -> None:
    turn = await tools.ask(question)
    words = _own_words(turn.answer)
    lines = [line for line in words.splitlines() if line.strip()]
    assert re.search(says, lines[-1]), words
    # The label, maybe a line on how names were read, then the lead: no quoted result.
    assert len(lines) <= 2 and len(lines[-1]) < 300, words
    assert not INTERNAL.search(words), INTERNAL.search(words)


@ON_MODULE_LOOP
async def test_a_vault_pointed_at_is_named_by_its_name_not_its_id(tools: World) -> None:
    listed, risky = await tools.converse(["USDC vaults on base", "how risky is the first one?"])
    words = _own_words(risky.answer)
    [vault_id] = [json.loads(c.arguments)["vault_id"] for c in risky.calls]
    assert vault_id in listed.results_of("main")[0] and vault_id not in words
    assert "Reading “the first one” as" in words and "“how risky is " in words
    assert re.search(r"has a security score of \d+/100 \((low|medium|high|very high) risk\)", words)
    assert not INTERNAL.search(words), INTERNAL.search(words)


@ON_MODULE_LOOP
async def test_a_ranking_by_a_figure_no_token_has_is_said_in_plain_words(tools: World) -> None:
    turn = await tools.ask("biggest losers this week")
    words = _own_words(turn.answer)
    assert words.startswith("The token search could not answer")
    assert "has a 7-day price change in the index" in words and "cannot be ranked" in words
    assert "search_tokens" not in words and "sort_by" not in words


def test_an_error_naming_a_parameter_is_not_quoted() -> None:
    from demo_planner.rendering import plain_reason

    assert plain_reason("Error: analyze_token timed out after 5 s") == (
        "the token analysis timed out after 5 s"
    )
    assert plain_reason("Error: invalid arguments for search_vaults: min_tvl_usd: bad") is None
    assert plain_reason("Error: no vault with id 'defillama:base:1f1665b0-aaaa'") is None


WALLET = {
    "address": "0x257BC0C6921b4ae476E65A28744ee181cd81c533",
    "ens_name": "yield-farmer.eth",
    "total_value_usd": 66291.71,
    "positions": [
        {"kind": "vault", "name": "Yearn Stablecoin", "value_usd": 26624.0},
        {"kind": "token", "name": "USD Coin", "value_usd": 12500.5},
        {"kind": "native", "name": "Ether", "value_usd": None},
    ],
}


async def test_a_wallet_answer_is_one_sentence_over_its_tables() -> None:
    call = ChatToolCall(id="demo_main_1", name="wallet_portfolio", arguments="{}")
    planner = DemoPlanner()
    text = "Portfolio of 0x257BC0C6921b4ae476E65A28744ee181cd81c533 …\n- [ethereum] vault …"
    request = ModelRequest(
        messages=[
            ChatMessage(role="user", content="show the portfolio of yield-farmer.eth"),
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage(
                role="tool",
                content=text,
                tool_call_id=call.id,
                name=call.name,
                structured=WALLET,
            ),
        ],
        tools=[],
    )
    answer = "".join([e.text async for e in planner.stream(request) if isinstance(e, TextDelta)])
    assert _own_words(answer) == (
        "This wallet (yield-farmer.eth) holds $66,291.71 of known value across 3 positions, "
        "1 of them in vaults."
    )


def test_leads_of_content_of_the_wrong_shape_are_none() -> None:
    assert lead("search_vaults", {"vaults": "many"}) is not None  # read as no rows
    assert lead("analyze_token", {"token": "PEPE"}) is None
    assert lead("a_tool_of_another_server", {"x": 1}) is None
    assert json.dumps(lead("search_vaults", {"found": 0, "vaults": []})) == (
        '"No vault matches these conditions."'
    )
