"""The scorer catches ungrounded answers: invented figures, missing facts, wrong tools."""

from __future__ import annotations

from evals.cases import Case, ExpectedCall, load_cases
from evals.scorer import ToolCallRecord, ToolResultRecord, TurnRecord, score

PEPE_RESULT = (
    "Pepe (PEPE) on ethereum 0x6982508145454Ce325dDbE47a25d4ec3d2311933\n"
    "Market, as of 2024-08-15 15:20 UTC: price $0.00000799 (-0.44% 24h), market cap $3.36B, "
    "rank #30, FDV $3.36B, 24h volume $617.45M.\n"
    "ATH $0.00001717 on 2024-05-27, -53.3% since."
)
CASE = Case(
    id="pepe",
    workload="token_analysis",
    question="What is PEPE?",
    calls=[ExpectedCall(tool="analyze_token", arguments={"symbol": "PEPE"}, exact=True)],
    facts=["0x6982508145454Ce325dDbE47a25d4ec3d2311933", "$3.36B"],
    must_not_include=["no token with symbol"],
)


def turn(answer: str, *, tool: str = "analyze_token", args: dict | None = None) -> TurnRecord:
    return TurnRecord(
        question=CASE.question,
        answer=answer,
        calls=[ToolCallRecord(call_id="c1", name=tool, arguments=args or {"symbol": "PEPE"})],
        results=[ToolResultRecord(call_id="c1", name=tool, ok=True, content=PEPE_RESULT)],
        finish_reason="stop",
        steps=2,
    )


def failed(checks: list) -> set[str]:
    return {c.name for c in checks if not c.ok}


def test_a_grounded_answer_passes() -> None:
    answer = (
        "PEPE (contract 0x6982508145454Ce325dDbE47a25d4ec3d2311933) has a market cap of "
        "3.36 billion dollars and trades at $0.00000799 as of August 15, 2024; its ATH was "
        "on 2024-05-27, 53% lower than today."
    )
    result = score(CASE, turn(answer))
    assert result.passed, result.checks
    assert result.facts_found == 2 and result.ungrounded == []


def test_an_invented_number_is_caught() -> None:
    answer = (
        "PEPE 0x6982508145454Ce325dDbE47a25d4ec3d2311933 has a market cap of $3.36B and "
        "about 250,000 holders; it could reach $0.0001 by 2027."
    )
    result = score(CASE, turn(answer))
    assert not result.passed
    assert failed(result.checks) == {"grounded_numbers"}
    assert result.ungrounded == ["250,000", "$0.0001", "2027"]


def test_a_missing_fact_is_caught() -> None:
    result = score(CASE, turn("PEPE is a memecoin with a market cap of $3.36B."))
    assert failed(result.checks) == {"facts"}
    assert result.facts_found == 1


def test_a_fact_in_the_answer_but_in_no_tool_result_is_not_grounded() -> None:
    case = CASE.model_copy(update={"facts": ["$3.36B", "Vitalik"]})
    answer = "Vitalik holds PEPE 0x6982508145454Ce325dDbE47a25d4ec3d2311933, market cap $3.36B."
    result = score(case, turn(answer))
    check = result.check("facts")
    assert check is not None and not check.ok and "in no tool result" in check.detail


def test_a_wrong_tool_and_wrong_arguments_are_caught() -> None:
    answer = "PEPE 0x6982508145454Ce325dDbE47a25d4ec3d2311933 market cap $3.36B."
    wrong_tool = score(CASE, turn(answer, tool="search_feed", args={"query": "pepe"}))
    assert "tools" in failed(wrong_tool.checks)
    wrong_args = score(CASE, turn(answer, args={"symbol": "PEPE", "chain": "base"}))
    assert failed(wrong_args.checks) == {"arguments"}


def test_a_token_screen_is_checked_by_its_compiled_filter() -> None:
    case = Case(
        id="screen",
        workload="token_search",
        question="stablecoins over $1M market cap on ethereum",
        calls=[
            ExpectedCall(
                tool="search_tokens",
                compiled_filter="chain:=ethereum && marketcap:>=1000000 && stablecoin:=true",
            )
        ],
    )
    good = {"chain": "eth", "stablecoin": True, "min_market_cap_usd": 1e6}
    bad = {"chain": "ethereum", "min_market_cap_usd": 1e6}
    record = TurnRecord(question=case.question, answer="", finish_reason="stop", steps=2)
    ok = record.model_copy(update={"calls": [ToolCallRecord(name="search_tokens", arguments=good)]})
    assert score(case, ok).passed
    off = record.model_copy(update={"calls": [ToolCallRecord(name="search_tokens", arguments=bad)]})
    check = score(case, off).check("arguments")
    assert check is not None and not check.ok and "marketcap:>=1000000" in check.detail


def test_forbidden_phrases_failures_and_cuts_are_checked() -> None:
    case = CASE.model_copy(update={"tool_error": True, "truncated": True, "facts": []})
    result = score(case, turn("no token with symbol PEPE"))
    assert {"must_not_include", "tool_error", "truncated"} <= failed(result.checks)


def test_the_question_set_is_well_formed() -> None:
    cases = load_cases()
    assert len(cases) >= 60
    assert {c.workload for c in cases} == {
        "token_analysis",
        "address_analysis",
        "token_search",
        "feed_search",
        "vaults",
        "wallet",
        "failure",
        "followup",
        "negation",
        "parts",
        "time_windows",
        "amounts",
        "comparisons",
        "exploits",
        "limits",
        "small_talk",
    }
    assert {c.profile for c in cases} == {
        "default",
        "vaults_down",
        "platform_hangs",
        "small_results",
    }
    # Every case asks for something checkable.
    assert all(c.calls or c.no_tool_calls for c in cases)
    # A message with nothing to answer ("thanks") is checked by calling nothing and saying
    # no figure; every other case names what its answer must carry.
    assert all(c.facts or c.mentions for c in cases if not (c.no_tool_calls and c.before))


def test_a_result_drawn_as_a_card_is_seen() -> None:
    # A short lead over a token card: the card's result counts as seen, so its facts do;
    # a forbidden phrase in it counts too, and the lead's own figures are still checked.
    record = turn("**Pepe (PEPE)** trades at $0.00000799, market cap $3.36B.")
    assert failed(score(CASE, record).checks) == {"facts"}  # the address is in no card yet
    record.results[0].card = "token"
    result = score(CASE, record)
    assert result.passed, result.checks
    forbidding = CASE.model_copy(update={"must_not_include": ["rank #30"]})
    assert failed(score(forbidding, record).checks) == {"must_not_include"}
    invented = turn("**Pepe (PEPE)** will reach $0.0001.")
    invented.results[0].card = "token"
    assert failed(score(CASE, invented).checks) == {"grounded_numbers"}


def test_a_lookup_card_is_seen_only_when_no_other_result_has_a_card() -> None:
    from evals.scorer import seen_text

    record = turn("Found it.")
    lookup = ToolResultRecord(call_id="c2", name="search_protocols", ok=True, content="aave-v3")
    record.results.append(lookup.model_copy(update={"card": "protocols"}))
    assert "aave-v3" in seen_text(record)
    record.results[0].card = "token"
    assert "aave-v3" not in seen_text(record) and "$3.36B" in seen_text(record)
