"""The first turn after a wake: a server still coming up delays the answer only by the bound."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chat_client import ChatClient, answer_text
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.support.tcp_proxy import TcpProxy

WAIT_BOUND = 1.0
COME_UP_SECONDS = 6.0


@pytest.fixture(scope="module")
def vaults() -> Iterator[InProcessMcpServer]:
    server = InProcessMcpServer(profile="vaults").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(default=Reply(text=["ok"])) as server:
        yield server


async def test_a_slow_server_costs_the_first_answer_only_the_wait_bound(
    tmp_path: Path, vaults: InProcessMcpServer, model: ScriptedModelServer
) -> None:
    proxy = TcpProxy(vaults.port)
    proxy_port = proxy.port
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "MCP_DEFAULT_SERVER_URL": f"http://127.0.0.1:{proxy_port}/mcp",
        "MCP_CONNECT_WAIT_SECONDS": str(WAIT_BOUND),
        "MCP_CONNECT_TIMEOUT_SECONDS": "10",
        "MCP_HEALTH_CACHE_SECONDS": "0",
    }
    with RuntimeProcess(tmp_path, variables) as runtime:
        proxy.ready_at = asyncio.get_running_loop().time() + 3600  # held until we say so
        await proxy.start()
        try:
            async with ChatClient(runtime.url, runtime.ws_url) as client:
                await client.connect()
                thread = await client.new_thread()
                # The server "boots" from the moment the object first starts connecting.
                proxy.ready_at = asyncio.get_running_loop().time() + COME_UP_SECONDS
                started = time.monotonic()
                frames = await client.turn(thread, "top vaults?")
                elapsed = time.monotonic() - started
                assert answer_text(frames) == "ok"
                # Answered on the wait bound, well before the server came up (slack for load).
                assert elapsed < COME_UP_SECONDS - 1.5
                first = model.requests[-1]
                assert "search_vaults" not in [
                    t["function"]["name"] for t in first.get("tools", [])
                ]
                system = first["messages"][0]["content"]
                assert "not connected right now" in system
                # Once the server is up, the next turn has its tools: nothing was given up.
                await asyncio.sleep(max(0.0, COME_UP_SECONDS - elapsed) + 0.5)
                for _ in range(40):
                    await client.turn(thread, "and now?")
                    names = [t["function"]["name"] for t in model.requests[-1].get("tools", [])]
                    if "search_vaults" in names:
                        break
                    await asyncio.sleep(0.25)
                assert "search_vaults" in names
        finally:
            await proxy.stop()
