"""A follow-up case over the real worker: earlier turns in one thread, the last one scored.

The worker runs as a real process with a scripted OpenAI-compatible model (the one fake:
the hosted model) and the real platform services behind its local tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from data_server.platform.app import platform_app
from evals.cases import Case
from evals.runner import ask_all
from tests.support.asgi_server import AsgiServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

PEPE = ScriptedToolCall(name="analyze_token", arguments={"symbol": "PEPE"})


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer) -> Iterator[str]:
    state: Path = tmp_path_factory.mktemp("eval-runtime")
    with AsgiServer(platform_app()) as platform:
        variables = {
            "ALBERT_MODE": "local",
            "MODEL_BASE_URL": model.base_url,
            "PLATFORM_API_URL": platform.url,
            # Two messages per two seconds: a case of three or more turns outruns it.
            "CHAT_MESSAGES_PER_MINUTE": "2",
            "RATE_WINDOW_SECONDS": "2",
        }
        with RuntimeProcess(state, variables) as process:
            yield process.url


def _follow_up() -> Case:
    return Case(
        id="pepe_market_cap_follow_up",
        workload="followup",
        before=["What is PEPE?"],
        question="and its market cap?",
        calls=[{"tool": "analyze_token", "arguments": {"symbol": "PEPE"}}],
        facts=["$3.36B"],
    )


def _user_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


@pytest.mark.timeout(90)
def test_earlier_turns_share_the_thread_and_only_the_last_turn_is_scored(
    model: ScriptedModelServer, runtime: str
) -> None:
    # The earlier turn looks PEPE up; the last one repeats its figure without a call of its
    # own, so what backs the figure is in the thread but not in the scored turn.
    model.requests.clear()
    model.script(
        Reply(tool_calls=[PEPE]),
        Reply(text=["PEPE is a meme coin with a market cap of $3.36B."]),
        Reply(text=["Its market cap is $3.36B."]),
    )
    (result,) = asyncio.run(ask_all(runtime, [_follow_up()], concurrency=1, turn_timeout=30))
    assert len(model.requests) == 3
    # One thread: the last question reached the model after the earlier turn and its tool result.
    last_request = model.requests[-1]
    assert _user_texts(last_request) == ["What is PEPE?", "and its market cap?"]
    assert any(m["role"] == "tool" for m in last_request["messages"])
    turn = result.turn
    assert turn.before == ["What is PEPE?"] and turn.question == "and its market cap?"
    assert turn.answer == "Its market cap is $3.36B." and turn.calls == [] and turn.results == []
    checks = {c.name: c for c in result.score.checks}
    assert not checks["tools"].ok and "analyze_token" in checks["tools"].detail
    assert not checks["facts"].ok and "in no tool result" in checks["facts"].detail
    assert result.score.ungrounded == ["$3.36B"] and not result.score.passed

    # The same conversation with the call made in the last turn passes.
    model.script(
        Reply(tool_calls=[PEPE]),
        Reply(text=["PEPE is a meme coin."]),
        Reply(tool_calls=[PEPE]),
        Reply(text=["Its market cap is $3.36B."]),
    )
    (result,) = asyncio.run(ask_all(runtime, [_follow_up()], concurrency=1, turn_timeout=30))
    assert [c.name for c in result.turn.calls] == ["analyze_token"]
    assert [r.ok for r in result.turn.results] == [True] and result.turn.steps == 2
    assert result.score.passed, [c for c in result.score.checks if not c.ok]


@pytest.mark.timeout(90)
def test_an_earlier_turn_that_fails_fails_the_case_without_asking_the_last(
    model: ScriptedModelServer, runtime: str
) -> None:
    model.requests.clear()
    model.script(Reply(status=400, error_message="scripted refusal"))
    (result,) = asyncio.run(ask_all(runtime, [_follow_up()], concurrency=1, turn_timeout=30))
    assert len(model.requests) == 1
    assert result.turn.error is not None and "earlier turn 1" in result.turn.error
    assert result.score.check("no_error") is not None and not result.score.passed


@pytest.mark.timeout(90)
def test_a_turn_refused_by_the_message_rate_is_sent_again_after_the_wait(
    model: ScriptedModelServer, runtime: str
) -> None:
    model.requests.clear()
    model.script(*(Reply(text=[f"Answer {i}."]) for i in range(4)))
    case = Case(
        id="four_turns",
        workload="followup",
        before=["What is PEPE?", "and BONK?", "and WIF?"],
        question="thanks",
        no_tool_calls=True,
    )
    (result,) = asyncio.run(ask_all(runtime, [case], concurrency=1, turn_timeout=30))
    assert result.turn.error is None and result.turn.answer == "Answer 3."
    assert _user_texts(model.requests[-1]) == ["What is PEPE?", "and BONK?", "and WIF?", "thanks"]
    assert result.score.passed
