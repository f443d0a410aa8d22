"""`albert dev` as a user runs it: Typesense, demo data, data server and worker, no model key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from demo_planner import LABEL
from demo_planner.rendering import HELP_EXAMPLES
from evals.cases import Case, ExpectedCall
from evals.client import EvalClient
from evals.scorer import score
from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("stack")
    process = RuntimeProcess(state, command="dev")
    # start() then stop(): `with process.start()` would enter the process a second time and
    # start (and leak) a second stack.
    process.start(timeout=120)
    try:
        yield process
    finally:
        process.stop()


def tool_calls(frames: list[dict]) -> list[dict]:
    return [f for f in frames if f["type"] == "tool_call"]


def structured(frames: list[dict], name: str) -> dict:
    """The structured content of the turn's first result of `name` (what its card shows)."""
    result = next(f for f in frames if f["type"] == "tool_result" and f["name"] == name)
    assert result["ok"] and isinstance(result["structured"], dict), result["content"][:300]
    return result["structured"]


async def test_the_demo_planner_answers_from_real_tools(stack: RuntimeProcess) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "What is PEPE?")
        assert [c["name"] for c in tool_calls(frames)] == ["analyze_token"]
        text = answer_text(frames)
        assert text.startswith(LABEL)
        # The answer leads; the token card is drawn from the result's structured content.
        assert "**Pepe (PEPE)** trades at $0.00000799" in text
        token = structured(frames, "analyze_token")["token"]
        assert token["identity"]["address"] == "0x6982508145454Ce325dDbE47a25d4ec3d2311933"
        frames = await client.turn(thread, "What is the market saying about Aave?")
        assert tool_calls(frames)[0]["name"] == "search_feed"
        assert "Aave" in answer_text(frames)


async def test_a_follow_up_in_the_same_thread_refines_the_previous_question(stack) -> None:
    """The worker sends the thread's history; the planner reads the follow-up from it."""
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "stablecoin vaults with TVL above $5M")
        assert [(c["name"], c["arguments"]) for c in tool_calls(frames)] == [
            ("search_vaults", {"stablecoin_only": True, "min_tvl_usd": 5e6})
        ]
        frames = await client.turn(thread, "and on base?")
        assert [(c["name"], c["arguments"]) for c in tool_calls(frames)] == [
            ("search_vaults", {"chain": "base", "stablecoin_only": True, "min_tvl_usd": 5e6})
        ]
        assert "Taking “stablecoin vaults with TVL above $5M” from your previous question" in (
            answer_text(frames)
        )
        frames = await client.turn(thread, "thanks")
        assert tool_calls(frames) == []
        assert "To change your previous question" in answer_text(frames)


async def test_structured_token_search_pages_through_one_day_of_data(stack) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "tokens over $1M market cap ranked by token ranking")
        call = tool_calls(frames)[0]
        assert call["name"] == "search_tokens"
        assert call["arguments"] == {"min_market_cap_usd": 1_000_000.0, "sort_by": "rank"}
        page = structured(frames, "search_tokens")
        first = [(h["chain"], h["address"]) for h in page["hits"]]
        assert len(first) == 10
        # A ranking reads one day of market data, and the answer says which.
        day = page["snapshot"]["date"]
        assert page["data_dates"] == [day] and f"Data as of {day}" in answer_text(frames)
        frames = await client.turn(
            thread, "tokens over $1M market cap ranked by token ranking, page 2"
        )
        assert tool_calls(frames)[0]["arguments"]["page"] == 2
        page = structured(frames, "search_tokens")
        second = [(h["chain"], h["address"]) for h in page["hits"]]
        assert 0 < len(second) <= 10 and page["data_dates"] == [day]
        assert not set(first) & set(second)
        # No product base URL is set in the local stack: no token page is linked.
        assert {h["deep_link"] for h in page["hits"]} == {None}
        assert "http" not in answer_text(frames)


async def test_stablecoin_screen_compiles_to_the_documented_filter(stack) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "stablecoins over $1M market cap on ethereum")
        assert tool_calls(frames)[0]["arguments"] == {
            "chain": "ethereum",
            "stablecoin": True,
            "min_market_cap_usd": 1_000_000.0,
        }
        hits = structured(frames, "search_tokens")["hits"]
        assert hits and all(h["chain"] == "ethereum" and h["stablecoin"] for h in hits)
        assert "USDT" in {h["symbol"] for h in hits}


# --- the wallet workload over the stack's own local chains -----------------------------------

FARMER = "0x257BC0C6921b4ae476E65A28744ee181cd81c533"
TREASURY = "0x96b56856C2E5EcFCAf028992cEE37478542B7175"
YEARN_USDC_ETHEREUM = "0x074134A2784F4F66b6ceD6f68849382990Ff3215"
YEARN_USDC_BASE = "0x19f233B2953275196e6343F17b76dA098c478E21"
USDC_ETHEREUM = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"


def _chain_uint(url: str, to: str, data: str) -> int:
    """One eth_call decoded as a uint, with calldata written out here (not the project's ABI)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "eth_call",
        "params": [{"to": to, "data": data}, "latest"],
    }
    return int(httpx.post(url, json=body, timeout=10).json()["result"], 16)


def _vault_assets(url: str, vault: str, holder: str) -> float:
    """convertToAssets(balanceOf(holder)) of a 6-decimal vault, in whole units."""
    shares = _chain_uint(url, vault, "0x70a08231" + holder[2:].lower().rjust(64, "0"))
    return _chain_uint(url, vault, "0x07a2d13a" + format(shares, "064x")) / 10**6


async def test_a_wallet_question_by_address_is_answered_from_the_chain(stack) -> None:
    urls = stack.chain_urls()
    assert set(urls) == {"ethereum", "base"}
    in_vault = _vault_assets(urls["ethereum"], YEARN_USDC_ETHEREUM, FARMER)
    usdc = _chain_uint(
        urls["ethereum"], USDC_ETHEREUM, "0x70a08231" + FARMER[2:].lower().rjust(64, "0")
    )
    question = f"what are my positions in {FARMER}"
    async with EvalClient(stack.url) as client:
        turn = await client.ask(question)
    case = Case(
        id="e2e_wallet_by_address",
        workload="wallet",
        question=question,
        calls=[ExpectedCall(tool="wallet_positions", arguments={"address": FARMER})],
        facts=[f"{in_vault:.2f}", f"{usdc / 10**6:.2f}", YEARN_USDC_ETHEREUM, "yearn-finance"],
        tool_error=False,
    )
    verdict = score(case, turn)
    assert verdict.passed, [c for c in verdict.checks if not c.ok]
    assert verdict.ungrounded == []
    # The answer is one sentence over the wallet's card (its positions, as read).
    assert [r.card for r in turn.results] == ["wallet"]
    assert turn.answer.removeprefix(LABEL).strip().startswith("This wallet has 12 positions")
    # Addresses come back EIP-55 checksummed (the scorer compares without case).
    assert FARMER in turn.results[0].content and YEARN_USDC_ETHEREUM in turn.results[0].content


async def test_a_wallet_question_by_ens_name_is_answered_from_the_chain(stack) -> None:
    urls = stack.chain_urls()
    in_vault = _vault_assets(urls["base"], YEARN_USDC_BASE, TREASURY)
    question = "top 2 positions by value for treasury.albert.eth"
    async with EvalClient(stack.url) as client:
        turn = await client.ask(question)
    case = Case(
        id="e2e_wallet_by_ens",
        workload="wallet",
        question=question,
        calls=[
            ExpectedCall(
                tool="wallet_top_positions",
                arguments={"address": "treasury.albert.eth", "limit": 2},
            )
        ],
        # The name resolved on the ethereum chain; the holdings are on base.
        facts=[TREASURY, f"{in_vault:.2f}", "250,000"],
        tool_error=False,
    )
    verdict = score(case, turn)
    assert verdict.passed, [c for c in verdict.checks if not c.ok]
    assert verdict.ungrounded == []
    # The answer is the chain's, not a guess: the figures change with the chain.
    seen = turn.results[0].content
    assert turn.results[0].card == "wallet" and f"${in_vault:,.2f}" in seen
    assert TREASURY in seen and YEARN_USDC_BASE in seen


FIGURE = re.compile(r"\d[\d,.]*\s*%|\$\s?\d|\b\d[\d,]*(?:\.\d+)?\b")


@pytest.mark.parametrize("tool", sorted(HELP_EXAMPLES))
async def test_every_example_the_help_offers_answers_with_data(
    stack: RuntimeProcess, tool: str
) -> None:
    # The help's examples (its one list, not a copy) through the whole stack: each runs
    # its tool with success and answers with a table or figures from the results.
    question = HELP_EXAMPLES[tool]
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, question)
    results = [f for f in frames if f["type"] == "tool_result"]
    assert tool in [r["name"] for r in results], question
    assert all(r["ok"] for r in results), [r["content"][:200] for r in results]
    # Each is drawn as its card (structured content), under a lead sentence.
    assert isinstance(structured(frames, tool), dict)
    answer = answer_text(frames).removeprefix(LABEL)
    assert FIGURE.search(answer) or "on record as" in answer, answer[:500]
    assert "could not" not in answer and "No data on record" not in answer, answer[:500]


SUGGESTIONS = re.findall(
    r'<button class="suggestion" type="button">([^<]+)</button>',
    (Path(__file__).resolve().parents[2] / "web" / "index.html").read_text(),
)


def test_the_page_offers_suggestions() -> None:
    assert len(SUGGESTIONS) >= 3


@pytest.mark.parametrize("question", SUGGESTIONS)
async def test_every_suggestion_on_the_empty_page_answers_with_data(
    stack: RuntimeProcess, question: str
) -> None:
    # The buttons of the page's empty screen (read from index.html) through the whole stack.
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, question)
    results = [f for f in frames if f["type"] == "tool_result"]
    assert results and all(r["ok"] for r in results), question
    answer = answer_text(frames).removeprefix(LABEL)
    assert FIGURE.search(answer) or "on record as" in answer, answer[:500]
    assert "could not" not in answer and "No data on record" not in answer, answer[:500]


async def test_two_protocols_compared_each_answer_with_their_own_vaults(stack) -> None:
    # The default world holds both lenders' WETH markets: one search per protocol, each
    # with vaults of its own protocol in the table.
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "Compare Aave and Morpho yields for WETH")
    searches = [c["arguments"] for c in tool_calls(frames) if c["name"] == "search_vaults"]
    assert {a.get("protocol") for a in searches} == {"aave-v3", "morpho-blue"}
    pages = [
        f["structured"]
        for f in frames
        if f["type"] == "tool_result" and f["name"] == "search_vaults"
    ]
    shown = [{v["protocol"] for v in page["vaults"]} for page in pages]
    assert sorted(map(sorted, shown)) == [["aave-v3"], ["morpho-blue"]]
    for protocol in ("aave-v3", "morpho-blue"):
        assert f"({protocol} on " in answer_text(frames)


@pytest.mark.parametrize("question", ["highest yields", "highest audited yields on Base"])
async def test_no_absurd_apy_leads_a_highest_yields_answer(stack, question: str) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, question)
    result = next(f for f in frames if f["type"] == "tool_result")
    page = result["structured"]
    apys = [v["apy"] for v in page["vaults"]]
    assert apys, result["content"][:800]
    assert apys == sorted(apys, reverse=True) and apys[0] <= 1000, apys
    # A likely outlier leads only where nothing else matched, and the card says so.
    first = page["vaults"][0]
    if first["outlier"] or first["tvl_usd"] is None:
        assert page["only_outliers"], result["content"][:1500]
    else:
        assert page["outliers_left_out"]


# --- questions read by their structure, one per class, through the whole stack ------------

UNI = "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"
USDC_STG = "defillama:ethereum:42eb6cd8-3b10-4b98-afc9-0771efe77f9f"
BY_CHAIN = {"sort_by": "apy", "min_tvl_usd": 1e6}
CLASS_QUESTIONS = [
    pytest.param(
        "USDT yields anywhere but ethereum or base",
        [("search_vaults", {"exclude_chains": ["ethereum", "base"], "asset_symbol": "USDT"})],
        (),
        id="negated-list",
    ),
    pytest.param(
        "what is PEPE trading at, and any news on it?",
        [("analyze_token", {"symbol": "PEPE"}), ("search_feed", {"query": "PEPE"})],
        ("**2. “any news on it?”**",),
        id="two-parts",
    ),
    pytest.param(
        "how has the pancakeswap USDC-STG pool on ethereum moved over the past 3 weeks?",
        [
            (
                "search_vaults",
                {
                    "chain": "ethereum",
                    "query": "USDC-STG",
                    "protocol": "pancakeswap-amm",
                    "protocols": ["pancakeswap-amm-v3"],
                },
            ),
            ("vault_history", {"vault_id": USDC_STG, "days": 21}),
        ],
        ("**Trend of USDC-STG (0.25%):** the APY is going",),
        id="time-window",
    ),
    pytest.param(
        "I hold 40k DAI, where can it earn? nothing sketchy",
        [
            (
                "search_vaults",
                {
                    "asset_symbol": "DAI",
                    "max_risk_rating": "medium",
                    "exposure": "single",
                    "sort_by": "apy",
                },
            )
        ],
        ("Read “40k DAI” as the amount you want to place", "at most medium"),
        id="amount",
    ),
    pytest.param(
        "stablecoin yields: base or arbitrum?",
        [
            ("search_vaults", {"stablecoin_only": True, "chain": "base", **BY_CHAIN}),
            ("search_vaults", {"stablecoin_only": True, "chain": "arbitrum", **BY_CHAIN}),
        ],
        ("**Verdict:**",),
        id="comparison",
    ),
    pytest.param(
        f"what's {UNI} trading at?",
        [("analyze_token", {"chain": "ethereum", "address": UNI})],
        (),
        id="contract-address",
    ),
    pytest.param(
        "has Aave v3 ever been hacked?",
        [
            ("search_vaults", {"protocol": "aave-v3", "sort_by": "tvl_usd", "per_page": 1}),
            ("search_feed", {"query": "Aave hack"}),
            ("analyze_risk", None),
        ],
        ("records 1 exploit",),
        id="exploit",
    ),
    pytest.param("swap my ETH to USDC", [], ("can't make transactions",), id="cannot-do"),
    pytest.param("much appreciated, legend", [], ("Glad to help",), id="small-talk"),
]


@pytest.mark.parametrize(("question", "calls", "says"), CLASS_QUESTIONS)
async def test_a_question_read_by_its_structure_calls_what_it_needs(
    stack: RuntimeProcess, question: str, calls: list, says: tuple[str, ...]
) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, question)
    # Name lookups may come first, or not, as the planner's cache has it.
    made = [
        (f["name"], f["arguments"])
        for f in tool_calls(frames)
        if not f["call_id"].startswith("demo_lookup_")
    ]
    assert [name for name, _ in made] == [name for name, _ in calls]
    for (_, arguments), (_, expected) in zip(made, calls, strict=True):
        if expected is not None:
            assert arguments == expected
    answer = answer_text(frames)
    assert answer.startswith(LABEL) and "could not match" not in answer
    for phrase in says:
        assert phrase in answer, answer[:1500]
