"""What the MCP tests on the chat stack share: a short retry schedule, and readings of the
model's requests and the servers' status."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.support.chat_client import ChatClient
from tests.support.scripted_model import Reply, ScriptedModelServer
from tests.support.tcp_proxy import TcpProxy

FAST_MCP = {
    "MCP_RETRY_BASE_SECONDS": "0.2",
    "MCP_RETRY_MAX_SECONDS": "0.8",
    "MCP_RETRY_ATTEMPTS": "5",
    "MCP_HEALTH_CACHE_SECONDS": "0",
    "MCP_HALF_OPEN_COOLDOWN_SECONDS": "0.5",
    "MCP_CONNECT_TIMEOUT_SECONDS": "2",
    "MCP_CONNECT_WAIT_SECONDS": "4",
}


async def up(gate: TcpProxy) -> None:
    if not gate.listening:
        await gate.start()


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def system_prompt(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


async def wait_status(client: ChatClient, name: str, state: str, within: float = 10.0) -> dict:
    deadline = time.monotonic() + within
    last: dict = {}
    while time.monotonic() < deadline:
        last = (await client.http.get("/api/mcp/status")).json()
        for server in last["servers"]:
            if server["name"] == name and server["state"] == state:
                return server
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} not {state} within {within}s: {last}")


async def chat(
    client: ChatClient, model: ScriptedModelServer, thread: str, *replies: Reply
) -> list:
    model.script(*(replies or (Reply(text=["ok"]),)))
    return await client.turn(thread, "What are the best stablecoin yields?")
