"""A remote server with one malformed tool per rule: those are quarantined, the rest work."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chat_client import ChatClient
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall


@pytest.fixture(scope="module")
def broken_server() -> Iterator[InProcessMcpServer]:
    server = InProcessMcpServer(profile="broken").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def runtime(tmp_path_factory, model, broken_server) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("quarantine")
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "MCP_DEFAULT_SERVER_URL": broken_server.url,
        "MCP_DEFAULT_SERVER_NAME": "broken",
        "MCP_CONNECT_WAIT_SECONDS": "5",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


async def wait_ready(client: ChatClient) -> None:
    """The first connect can outlast the first turn's wait bound on a loaded machine."""
    status: dict[str, object] = {}
    for _ in range(200):
        [status] = (await client.http.get("/api/mcp/status")).json()["servers"]
        if status["state"] == "ready":
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the broken server never became ready: {status}")


async def test_malformed_tools_are_left_out_alone_and_reported(runtime, model) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        await wait_ready(client)
        thread = await client.new_thread()
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="echo", arguments={"text": "still works"})]),
            Reply(text=["done"]),
        )
        frames = await client.turn(thread, "use the broken server")
        offered = [t["function"]["name"] for t in model.requests[-2]["tools"]]
        assert "echo" in offered
        assert "bad_schema" not in offered and "t" * 100 not in offered
        result = next(f for f in frames if f["type"] == "tool_result")
        assert result["ok"] and "still works" in result["content"]
        assert frames[-1]["finish_reason"] == "stop"

        [status] = (await client.http.get("/api/mcp/status")).json()["servers"]
        assert status["state"] == "ready"
        quarantined = sorted(status["quarantined"])
        assert len(quarantined) == 2
        assert quarantined[0].startswith("bad_schema: its input schema is not valid JSON Schema")
        assert quarantined[1] == "t" * 80 + ": its name is 100 characters (64 at most)"
