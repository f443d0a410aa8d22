"""The case format: earlier turns of a follow-up case are validated and listed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evals.__main__ import main
from evals.cases import Case, load_cases


def test_earlier_turns_are_optional_and_must_not_be_empty() -> None:
    case = Case(id="a", workload="followup", before=["USDC vaults on base"], question="top 3")
    assert case.before == ["USDC vaults on base"]
    assert Case(id="b", workload="vaults", question="USDC vaults on base").before == []
    with pytest.raises(ValidationError, match="at least 1 character"):
        Case(id="c", workload="followup", before=[""], question="top 3")
    with pytest.raises(ValidationError, match="valid list"):
        Case.model_validate({"id": "d", "workload": "followup", "before": "x", "question": "y"})


def test_the_question_set_has_follow_ups_of_every_kind() -> None:
    follow_ups = [c for c in load_cases() if c.before]
    assert 5 <= len(follow_ups) <= 16
    assert all(c.workload == "followup" for c in follow_ups)
    assert sum(c.no_tool_calls for c in follow_ups) == 1


def test_list_shows_the_earlier_turns_under_their_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("followup_chain_changed"))
    assert "and on base?" in lines[at]
    assert "before 1: stablecoin vaults with TVL above $5M on ethereum" in lines[at + 1]
