"""Runner plumbing that needs no stack: model vars, profile wiring, skips, totals."""

from __future__ import annotations

from pathlib import Path

from evals.cases import load_cases
from evals.runner import CaseResult, ModelOptions, run_eval, summarise
from evals.scorer import TurnRecord, score
from evals.stack import PROFILES, StackProcess, profile_variables


def test_model_options_become_the_worker_vars() -> None:
    assert ModelOptions().variables() == {}
    assert ModelOptions(base_url="http://gw/v1", api_key="k", name="m").variables() == {
        "MODEL_BASE_URL": "http://gw/v1",
        "MODEL_API_KEY": "k",
        "MODEL_NAME": "m",
    }


def test_a_failure_profile_is_wired_to_the_base_stack_then_changed(tmp_path: Path) -> None:
    base = StackProcess(tmp_path, command="dev", variables={"MODEL_BASE_URL": "http://gw/v1"})
    base.log_path.write_text("Starting Typesense…\n  Typesense on http://127.0.0.1:4321\n")
    variables = profile_variables(PROFILES["vaults_down"], base, 9, "http://127.0.0.1:7")
    assert variables["TYPESENSE_URL"] == "http://127.0.0.1:4321"
    assert variables["PLATFORM_API_URL"] == f"{base.data_url}/platform"
    assert variables["MCP_DEFAULT_SERVER_URL"] == "http://127.0.0.1:9/mcp"
    assert variables["MODEL_BASE_URL"] == "http://gw/v1"
    hangs = profile_variables(PROFILES["platform_hangs"], base, 9, "http://127.0.0.1:7")
    assert hangs["PLATFORM_API_URL"] == "http://127.0.0.1:7/platform"
    assert hangs["MCP_DEFAULT_SERVER_URL"] == f"{base.data_url}/mcp"


def test_failure_profiles_are_skipped_against_a_stack_the_runner_did_not_start() -> None:
    failures = [c for c in load_cases() if c.profile != "default"]
    report = run_eval(failures, url="http://127.0.0.1:9")
    assert report.totals.cases == 0 and set(report.skipped) == {c.id for c in failures}


def test_totals_count_passes_per_workload_and_check() -> None:
    cases = {c.id: c for c in load_cases()}
    case = cases["token_pepe_what_is"]
    empty = TurnRecord(question=case.question, finish_reason="stop", steps=1)
    results = [CaseResult(score=score(case, empty), turn=empty)]
    totals = summarise(results, {}, "demo-planner").totals
    assert totals.passed == 0 and totals.by_workload == {"token_analysis": "0/1"}
    assert totals.by_check["tools"] == "0/1" and totals.by_check["finish"] == "1/1"
