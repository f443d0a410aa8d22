"""A model gateway that echoes the key in its error body: the browser gets a classified
error frame, the log gets the body with the key redacted, the key goes nowhere else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chat_client import ChatClient
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer

MODEL_KEY = "sk-live-4f1e2d3c5b6a7980"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, model) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("gateway-errors")
    variables = {
        "ALBERT_MODE": "production",
        "MODEL_BASE_URL": model.base_url,
        "MODEL_API_KEY": MODEL_KEY,
        "MCP_DEFAULT_SERVER_URL": "",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


@pytest.mark.parametrize(
    ("status", "retryable"), [(401, False), (400, False), (429, True), (500, True), (503, True)]
)
async def test_an_echoed_key_never_reaches_the_browser(runtime, model, status, retryable) -> None:
    echo = f"Incorrect API key provided: Bearer {MODEL_KEY}. Request id req_1"
    model.script(Reply(status=status, error_message=echo))
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "hello")
        [error] = [f for f in frames if f["type"] == "error"]
        assert f"HTTP {status}" in error["detail"] and error["retryable"] is retryable
        assert "HTTP" not in error["message"]  # plain words; the status is in the detail
        stored = await client.thread(thread)
    seen_by_browser = json.dumps(frames) + json.dumps(stored)
    assert MODEL_KEY not in seen_by_browser and "Incorrect API key" not in seen_by_browser
    log = runtime.log_tail(10_000)
    assert MODEL_KEY not in log
    # One warning line for the failed turn, with the gateway's own words redacted.
    [line] = [ln for ln in log.splitlines() if "the model failed" in ln and f"HTTP {status}" in ln]
    assert line.startswith("WARNING") and "[redacted]" in line


async def test_an_error_event_inside_the_stream_is_classified_too(runtime, model) -> None:
    # A gateway that starts streaming and then reports an error event with the key in it.
    model.script(Reply(text=["partial "], stream_error=f"overloaded; your key {MODEL_KEY}"))
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "hello")
        stored = await client.thread(thread)
    [error] = [f for f in frames if f["type"] == "error"]
    assert error["retryable"] and "overloaded" in error["detail"]
    assert "Try again" in error["message"]
    assert MODEL_KEY not in json.dumps(frames) + json.dumps(stored)
    assert MODEL_KEY not in runtime.log_tail(10_000)
