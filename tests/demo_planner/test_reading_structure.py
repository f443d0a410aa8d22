"""The structure a question is read by, piece by piece, without tools: what a negation
reaches, where a question splits into parts, time windows, amounts and risk levels, small
talk and what no tool can do; and the lines an answer draws from results (trend, verdict,
sizing, the hacks register), which may only quote figures the results hold."""

from __future__ import annotations

from datetime import date

import pytest

from albert.tools.base import ToolSpec
from demo_planner import DemoPlanner
from demo_planner.amounts import Amount, sizing_lines
from demo_planner.binding import bind_fields
from demo_planner.capabilities import find_gap
from demo_planner.clauses import split_question
from demo_planner.comparisons import sides_from, verdict_lines
from demo_planner.exploits import register_entries, register_lines
from demo_planner.names import NameIndex, candidates
from demo_planner.plans import Context, make_context
from demo_planner.reading import Reading, read
from demo_planner.small_talk import small_talk
from demo_planner.timeframes import trend_lines
from demo_planner.vault_table import vault_rows
from evals.numbers import ungrounded

TODAY = date(2026, 12, 7)


@pytest.fixture(scope="module")
def ctx(specs: dict[str, ToolSpec]) -> Context:
    return make_context(DemoPlanner().lexicons(list(specs.values())), NameIndex(), TODAY)


def reading(question: str, ctx: Context) -> Reading:
    return read(question, ctx.table, TODAY)


def negated_words(question: str, ctx: Context) -> list[str]:
    r = reading(question, ctx)
    return [r.tokens[i].text for i in sorted(r.negated)]


# --- negation and its scope --------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "negated"),
    [
        ("USDC vaults not on base or arbitrum", ["base", "arbitrum"]),
        ("anything but Aave", ["Aave"]),
        ("stable yields without Morpho/Euler", ["Morpho", "Euler"]),
        ("excluding morpho, euler and spark, best USDC vaults", ["morpho", "euler", "spark"]),
        ("leave out Maple, Sky and Fluid", ["Maple", "Sky", "Fluid"]),
        ("everything except curve or convex", ["curve", "convex"]),
        ("USDT yields anywhere but ethereum or base", ["ethereum", "base"]),
        ("neither Aave nor Compound", ["Aave", "Compound"]),
        ("other than Lido and Rocket, ETH yields", ["Lido", "Rocket"]),
        ("I dont trust Euler", ["Euler"]),
        ("I don't want anything on polygon", ["polygon"]),
        # The list ends at a bare comma that does not go on: USDC is no item of it.
        ("avoid mode and base, USDC vaults above 5%", ["mode", "base"]),
        # "no more than" is a bound, not a negation.
        ("vaults with no more than 20% rewards", []),
        ("not only Aave vaults", []),
        ("free USDC yields on base", []),
    ],
)
def test_a_negation_reaches_its_whole_list(question: str, negated: list[str], ctx: Context) -> None:
    assert negated_words(question, ctx) == negated


@pytest.mark.parametrize(
    ("question", "audited"),
    [
        ("vaults that havent been audited", False),
        ("vaults that haven't been audited", False),
        ("vaults that haven\u2019t been audited", False),
        ("protocols that arent audited", False),
        ("isnt audited", False),
        ("never been audited", False),
        ("lacking audits", False),
        ("no audits", False),
        ("skip unaudited vaults", True),
        ("skip the unaudited stuff", True),
        ("no unaudited pools", True),
        ("unaudited vaults", False),
        ("audited vaults", True),
    ],
)
def test_a_negated_flag_and_a_negated_off_word(question: str, audited: bool, ctx: Context) -> None:
    binding = bind_fields(reading(question, ctx), ctx.lexicons["search_vaults"])
    assert binding.arguments.get("audited") is audited


def test_a_negated_auxiliary_is_no_name(ctx: Context) -> None:
    words = [c.text for c in candidates(reading("which vaults isnt audited on Base", ctx))]
    assert "isnt" not in words


@pytest.mark.parametrize(
    ("question", "arguments"),
    [
        ("pools that are not high risk", {"max_risk_rating": "medium"}),
        ("USDC vaults but no LPs", {"exposure": "single"}),
        ("vaults with no rewards", {"max_reward_share": 0.0}),
        ("vaults without emissions on base", {"max_reward_share": 0.0, "chain": "base"}),
    ],
)
def test_a_negated_value_or_share(question: str, arguments: dict, ctx: Context) -> None:
    binding = bind_fields(reading(question, ctx), ctx.lexicons["search_vaults"])
    assert arguments.items() <= binding.arguments.items()


# --- questions in parts ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "what's ETH trading at and any news on it?",
            ["what's ETH trading at", "any news on ETH?"],
        ),
        ("price of AAVE? Also any news?", ["price of AAVE", "any news about AAVE"]),
        ("Tell me about LINK. Any headlines?", ["Tell me about LINK", "Any headlines about LINK"]),
        ("ETH price? also best eth staking yield", ["ETH price", "best eth staking yield"]),
        (
            "what is pepe, and what is its market cap?",
            ["what is pepe", "what is pepe's market cap?"],
        ),
        (
            "what's the TVL of Curve and has it been hacked?",
            ["what's the TVL of Curve", "has Curve been hacked?"],
        ),
        (
            "best stablecoin yields on base and what is PEPE",
            ["best stablecoin yields on base", "what is PEPE"],
        ),
    ],
)
def test_a_question_of_several_parts_splits_with_its_subject(
    question: str, parts: list[str]
) -> None:
    assert [p.text for p in split_question(question)] == parts


@pytest.mark.parametrize(
    "question",
    [
        "Compare Aave and Compound for USDC",
        "history and risk of the safest DAI vault",
        "USDC vaults on arbitrum with TVL over $10M and APY between 5 and 15%",
        "Find the best WBTC vault and tell me how risky it is",
        "the APY of the Syrup USDC vault and is it audited?",
        "USDC vaults on base, how has the apy moved since March?",
        "I have 50k USDC, where should I put it? nothing sketchy",
        "with $20k, what are the best USDC vaults on base?",
        "skip the unaudited stuff and show me stablecoin pools",
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913 on base, what is it?",
        "stablecoin yields on base but nothing sketchy",
    ],
)
def test_one_question_is_one_part(question: str) -> None:
    assert [p.text for p in split_question(question)] == [question]


# --- time windows ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "days", "trend"),
    [
        ("APY over the past six weeks", 42, False),
        ("history over the last 3 months", 90, False),
        ("how did it do last week", 7, False),
        ("over the past fortnight", 14, False),
        ("since March", 282, False),
        ("since early March", 282, False),
        ("since mid March", 268, False),
        ("since January 2026", 341, False),
        ("since 2026-11-30", 8, False),
        ("since the start of the year", 341, False),
        ("dropped since last month?", 30, False),
        ("year to date", 341, False),
        ("is it going up or down?", None, True),
        ("rising or falling?", None, True),
        ("lately", None, False),
    ],
)
def test_time_expressions_become_windows(
    question: str, days: int | None, trend: bool, ctx: Context
) -> None:
    windows = reading(question, ctx).windows
    assert [(w.days, w.trend) for w in windows] == [(days, trend)]


def test_since_a_month_later_in_the_year_is_last_year() -> None:
    table = make_context({}, NameIndex(), date(2026, 2, 10)).table
    assert [w.days for w in read("since March", table, date(2026, 2, 10)).windows] == [347]


def test_a_month_word_in_a_window_is_no_name(ctx: Context) -> None:
    assert [c.text for c in candidates(reading("USDC vaults since March", ctx))] == ["USDC"]


# --- amounts and risk levels ----------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "value", "asset"),
    [
        ("I have 50k USDC", 50_000, "USDC"),
        ("$250k in stables", 250_000, "stablecoins"),
        ("where can I park 10 ETH", 10, "ETH"),
        ("what can I earn on 5,000 DAI?", 5_000, "DAI"),
        ("the best I can get on $1M USDC", 1_000_000, "USDC"),
        ("10 grand in USDT, where?", 10_000, "USDT"),
        ("I've got $5k worth of WETH", 5_000, "WETH"),
        ("with 2k dollars, best USDC vault", 2_000, "USD"),
        ("I want to invest 10k", 10_000, "USD"),
    ],
)
def test_an_amount_is_a_position_never_a_condition(
    question: str, value: float, asset: str, ctx: Context
) -> None:
    r = reading(question, ctx)
    assert [(a.value, a.asset) for a in r.amounts] == [(value, asset)]
    assert r.numbers.conditions == []
    binding = bind_fields(r, ctx.lexicons["search_vaults"])
    assert "min_tvl_usd" not in binding.arguments


def test_an_amount_priced_is_not_placed(ctx: Context) -> None:
    priced = reading("how much is 1 ETH worth in dollars?", ctx).amounts
    placed = reading("where can 1 ETH earn the most?", ctx).amounts
    assert [a.placed for a in priced] == [False] and [a.placed for a in placed] == [True]


@pytest.mark.parametrize(
    "question", ["vaults with $10M TVL", "TVL of 5M", "tokens worth 1B", "at least 50k TVL"]
)
def test_a_field_value_stays_a_condition(question: str, ctx: Context) -> None:
    r = reading(question, ctx)
    assert r.amounts == [] and r.numbers.conditions


@pytest.mark.parametrize(
    ("question", "level"),
    [
        ("nothing sketchy", "medium"),
        ("no degen stuff", "medium"),
        ("not too risky please", "medium"),
        ("avoid anything dodgy", "medium"),
        ("somewhere safe", "low"),
        ("I want to play it safe", "low"),
        ("conservative options", "low"),
        ("blue chip only", "low"),
        ("I'm a degen", "high"),
        ("is it safe?", None),
        ("how risky is the top vault?", None),
    ],
)
def test_a_risk_level_said_in_words(question: str, level: str | None, ctx: Context) -> None:
    appetite = reading(question, ctx).appetite
    assert (appetite.level if appetite else None) == level


# --- small talk and what no tool can do -----------------------------------------------


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("cheers mate, legend", "thanks"),
        ("appreciate it 🙏", "thanks"),
        ("thx a ton!", "thanks"),
        ("much obliged", "thanks"),
        ("👍", "thanks"),
        ("gm fren", "greeting"),
        ("hey there!", "greeting"),
        ("who are you?", "identity"),
        ("what can you do", "identity"),
        ("how's it going?", "wellbeing"),
        ("that's all for now, bye", "farewell"),
        ("lol ok", "agree"),
        ("thanks, and on base?", None),
        ("why?", None),
    ],
)
def test_small_talk_is_read_as_a_whole(message: str, kind: str | None) -> None:
    assert small_talk(message, asks_for_data=False) == kind


@pytest.mark.parametrize(
    ("question", "kind", "nearest"),
    [
        ("swap 1 ETH to USDC", "trade", "none"),
        ("can you buy me some PEPE", "trade", "none"),
        ("please bridge my USDC to base", "trade", "none"),
        ("send 100 USDC to vitalik.eth", "trade", "none"),
        ("can you stake my ETH for me? best staking yields", "trade", "vaults"),
        ("will ETH hit 10k?", "forecast", "token"),
        ("is SOL going to pump next month?", "forecast", "token"),
        ("price prediction for ARB", "forecast", "token"),
        ("will this APY last?", "forecast", "history"),
        ("what's the gas price on ethereum?", "gas", "none"),
        ("whats the eth gas rn", "gas", "none"),
        ("can u move my usdc from arbitrum to base", "trade", "none"),
        ("how much are fees to send ETH", "gas", "none"),
        ("alert me when PEPE dumps", "alert", "token"),
        ("should I buy PEPE?", "advice", "token"),
    ],
)
def test_what_no_tool_can_do(question: str, kind: str, nearest: str, ctx: Context) -> None:
    r = reading(question, ctx)
    tickers = [t.text for t in r.tokens if t.text.isupper() and len(t.text) > 1]
    gap = find_gap(r.words, tickers, vault_words=r.has("vault"))
    assert gap is not None and (gap.kind, gap.nearest) == (kind, nearest)


@pytest.mark.parametrize(
    "question",
    [
        "which pools earn the most swap fees?",
        "tokens with strong buy pressure",
        "where can I stake ETH?",
        "how do I stake ETH",
        "is the APY going up or down?",
        "what is PEPE?",
    ],
)
def test_what_tools_can_do_is_no_gap(question: str, ctx: Context) -> None:
    r = reading(question, ctx)
    assert find_gap(r.words, [], vault_words=r.has("vault")) is None


# --- lines drawn from results ---------------------------------------------------------

HISTORY = (
    "History of DAI-USDC (0.01%): 42 daily points, 2025-08-26 to 2025-10-06 (UTC).\n"
    "APY 2.88126% → 8.0236% (mean 7.1%, min 0.05946%, max 28.28146%).\n"
    "TVL change: -17.2%."
)
FLAT = (
    "History of X: 30 daily points, 2025-09-01 to 2025-09-30 (UTC).\n"
    "APY 5.0% → 5.1% (mean 5.05%, min 4.9%, max 5.2%).\nTVL change: n/a."
)
ONE_POINT = (
    "History of Y: 1 daily points, 2025-08-31 to 2025-08-31 (UTC).\n"
    "APY 3.0% → 3.0% (mean 3.0%, min 3.0%, max 3.0%).\nTVL change: n/a."
)


def test_the_trend_is_said_in_words_with_the_results_figures() -> None:
    up = trend_lines(HISTORY)[0]
    assert "going up from 2025-08-26 to 2025-10-06: from 2.88126% to 8.0236%" in up
    assert "TVL shrank" in up and "-17.2%" in up
    assert "roughly flat" in trend_lines(FLAT)[0]
    assert "only one daily point" in trend_lines(ONE_POINT)[0]
    assert trend_lines("No history points for Z in the last 30 days.") == []
    for text in (HISTORY, FLAT, ONE_POINT):
        assert ungrounded("\n".join(trend_lines(text)), [text]) == []


def _line(name: str, chain: str, apy: str, tvl: str, outlier: bool = False) -> str:
    flag = "; likely outlier" if outlier else ""
    return (
        f"- {name} [p on {chain}] assets USDC; APY {apy} (base {apy}, rewards n/a); TVL {tvl}; "
        f"security 70/100; risk medium{flag}; id s:{chain}:{name}"
    )


def test_a_verdict_quotes_each_sides_best_apy() -> None:
    base = "\n".join(
        [_line("A", "base", "4.91%", "$50.49M"), _line("B", "base", "99.00%", "$1.00M", True)]
    )
    arbitrum = _line("C", "arbitrum", "3.68%", "$61.32M")
    lines = verdict_lines(sides_from(["base", "arbitrum"], [base, arbitrum]), "USDC yield")
    assert lines[0].startswith("**Verdict:** base pays more for USDC yield")
    assert "4.91% (A, p, TVL $50.49M) on base, against 3.68%" in lines[0]
    assert "99.00%" not in lines[0]  # a likely outlier decides nothing
    assert ungrounded("\n".join(lines), [base, arbitrum]) == []
    failed = verdict_lines(sides_from(["base", "arbitrum"], [base, "Error: timed out"]), "x")
    assert "could not compare" in failed[0]
    empty = verdict_lines(sides_from(["base", "arbitrum"], [base, "0 vaults match"]), "x")
    assert "Nothing matched on arbitrum" in " ".join(empty)


def test_sizing_weighs_the_amount_in_words_only() -> None:
    rows = vault_rows("\n".join([_line("Big", "base", "5%", "$120.30M"),
                                 _line("Small", "base", "9%", "$400.00K")]))  # fmt: skip
    lines = sizing_lines(Amount(50_000, "USDC", "50k USDC", 0, 1), rows)
    assert "50k USDC would be a large part of Small (TVL $400.00K)" in lines[0]
    assert ungrounded("\n".join(lines), ["50k USDC", "$400.00K $120.30M"]) == []
    eth = sizing_lines(Amount(10, "ETH", "10 ETH", 0, 1), rows)
    assert "no price for ETH" in eth[0]


@pytest.mark.parametrize(
    "factor",
    [
        "- exploits: 1 (concern) The protocol has been exploited before.",
        "- Past exploits: 1 (concern) The protocol has been exploited before.",
    ],
)
def test_the_register_is_read_from_the_risk_analysis(factor: str) -> None:
    text = "\n".join(
        [
            "X: security 70/100, risk medium, 1 concern(s): exploits.",
            _line("X", "ethereum", "3%", "$1.00B").replace("[p on", "[aave-v3 on"),
            "Factors:",
            factor,
        ]
    )
    entries = register_entries([text])
    assert [(e.protocol, e.count) for e in entries] == [("aave-v3", 1)]
    lines = register_lines(entries, ["Aave"])
    assert "records 1 exploit of this protocol" in lines[0]
    assert ungrounded("\n".join(lines), [text]) == []
