"""The runner drives any OpenAI-compatible model: a scripted one that invents a figure is caught.

The scripted model calls the right tool with the right arguments, then answers with one
true fact, one invented market cap and one invented date: the report must show exactly that
(the true figures are seen in the result's card; the invented ones are the answer's own).
The worker runs alone (`albert serve`) with the platform services, which is all the question
needs; the full stack is covered by test_question_set.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from data_server.platform.app import platform_app
from evals.cases import load_cases
from evals.runner import ModelOptions, run_eval
from tests.support.asgi_server import AsgiServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

PEPE = "0x6982508145454Ce325dDbE47a25d4ec3d2311933"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer
) -> Iterator[RuntimeProcess]:
    with AsgiServer(platform_app()) as platform:
        variables = {
            "ALBERT_MODE": "local",
            "PLATFORM_API_URL": platform.url,
            **ModelOptions(base_url=model.base_url, api_key="test-key").variables(),
        }
        with RuntimeProcess(tmp_path_factory.mktemp("worker"), variables) as process:
            yield process


@pytest.mark.timeout(120)
def test_an_invented_figure_from_a_real_model_client_is_reported(model, worker) -> None:
    model.script(
        Reply(tool_calls=[ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"})]),
        Reply(
            text=[
                f"PEPE ({PEPE}) is a memecoin ",
                "with a market cap of about $4.2B; it will double by March 2027.",
            ]
        ),
    )
    case = next(c for c in load_cases() if c.id == "token_pepe_what_is")
    report = run_eval(
        [case],
        url=worker.url,
        model=ModelOptions(base_url=model.base_url, name="scripted"),
        concurrency=1,
        turn_timeout=30,
    )
    assert report.model == "scripted" and report.totals.cases == 1
    (result,) = report.results
    assert result.turn.calls[0].name == "analyze_token"
    assert result.score.check("tools").ok and result.score.check("arguments").ok
    assert result.score.ungrounded == ["$4.2B", "March 2027"]
    # The true figures are seen all the same: the chat draws the result as a token card.
    assert [r.card for r in result.turn.results] == ["token"]
    facts = result.score.check("facts")
    assert facts is not None and facts.ok
    grounded = result.score.check("grounded_numbers")
    assert grounded is not None and not grounded.ok and not result.score.passed
    # The worker really used the model: the tool schema reached it and so did the result.
    assert any(t["function"]["name"] == "analyze_token" for t in model.requests[0]["tools"])
    assert "$3.36B" in model.requests[1]["messages"][-1]["content"]
