"""`albert dev --runtime workerd` as a new user runs it: the whole local stack with the worker
on Cloudflare's workerd, no model key. The first question of a fresh stack is a vault
question, answered with the data server's MCP tools through the worker's real `mcp` client
inside workerd (the SDK loaded in that first object's cold isolate)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from demo_planner import LABEL
from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("stack-workerd")
    process = RuntimeProcess(state, command="dev", runtime="workerd")
    process.start(timeout=180)
    try:
        yield process
    finally:
        process.stop()


async def test_the_first_question_of_a_fresh_stack_is_answered_by_the_vault_server(
    stack: RuntimeProcess,
) -> None:
    async with ChatClient(stack.url, stack.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, "stablecoin vaults with TVL above $5M")
        calls = [f for f in frames if f["type"] == "tool_call"]
        results = [f for f in frames if f["type"] == "tool_result"]
        assert [(c["name"], c.get("server")) for c in calls] == [("search_vaults", "vaults")]
        assert results[0]["ok"], results[0]["content"][:500]
        assert frames[-1]["finish_reason"] == "stop"
        text = answer_text(frames)
        assert text.startswith(LABEL) and "not connected" not in text
        status = (await client.http.get("/api/mcp/status")).json()["servers"]
        assert [(s["name"], s["state"]) for s in status] == [("vaults", "ready")]
