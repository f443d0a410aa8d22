"""The whole question set against the real local stack with the demo planner.

`albert dev` (Typesense, demo data, data server, worker) plus one worker per failure
profile, all started once for this module by the runner itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.cases import load_cases
from evals.runner import EvalReport, run_eval

MIN_PASS_RATE = 0.95


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> EvalReport:
    state: Path = tmp_path_factory.mktemp("evals")
    return run_eval(load_cases(), state_dir=state, concurrency=4, turn_timeout=30)


def _failures(report: EvalReport) -> str:
    lines = []
    for r in report.results:
        if not r.score.passed:
            reasons = "; ".join(f"{c.name}: {c.detail}" for c in r.score.checks if not c.ok)
            lines.append(f"{r.score.case_id}: {reasons}")
    return "\n".join(lines)


@pytest.mark.timeout(240)
def test_the_demo_planner_passes_the_question_set(report: EvalReport) -> None:
    totals = report.totals
    assert totals.skipped == 0 and totals.cases == len(load_cases())
    assert totals.pass_rate >= MIN_PASS_RATE, _failures(report)
    # The planner renders tool results verbatim: not one figure without a source.
    assert totals.ungrounded_numbers == 0, _failures(report)


@pytest.mark.timeout(240)
def test_follow_ups_are_read_as_the_previous_question_with_the_new_parts(
    report: EvalReport,
) -> None:
    follow_ups = [r for r in report.results if r.turn.before]
    assert len(follow_ups) >= 5
    for result in follow_ups:
        assert result.score.passed, _failures(report)
        # Only the last turn was recorded: its calls are the refined question's, one step.
        assert result.turn.question not in result.turn.before
    thanks = next(r for r in follow_ups if r.score.case_id == "followup_thanks_calls_nothing")
    assert thanks.turn.calls == [] and "To change your previous question" in thanks.turn.answer
    assert "Glad to help" in thanks.turn.answer and "Try, for example" not in thanks.turn.answer


@pytest.mark.timeout(240)
def test_failure_profiles_are_reported_honestly(report: EvalReport) -> None:
    by_id = {r.score.case_id: r for r in report.results}
    hang = by_id["fail_platform_hangs_token"]
    assert [res.ok for res in hang.turn.results] == [False]
    assert "timed out" in hang.turn.answer and "$3.36B" not in hang.turn.answer
    cut = by_id["fail_truncated_token"]
    assert cut.turn.results[0].truncated and "could not check the rest" in cut.turn.answer
    down = by_id["fail_vaults_down_search"]
    assert down.turn.calls == [] and "vault" in down.turn.answer.lower()
