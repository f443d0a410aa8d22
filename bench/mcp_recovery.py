"""MCP recovery: from a vault server's restart to its tools being usable again, against the
bound the backoff schedule promises.

A real MCP server process is killed (SIGKILL) while a client is connected; a chat turn
lets the object notice; after a varying pause the server is started again on the same
port. The clock starts when the new process answers HTTP and stops when the object
reports the server `ready`; then a turn calls the remote tool to prove it works. The
bound for one restart is the wait until the retry the object has scheduled at that moment
(`next_retry_in_seconds`, at most the schedule's largest delay) plus one connect.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.core import BenchSizes, Row, Spread
from bench.stack import running_runtime, runtime_vars, state_dir
from tests.support.chat_client import ChatClient
from tests.support.mcp_test_server import McpTestServer
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

# A shortened schedule, ceilings 0.25, 0.5, 1, 2, 2, 2, 2, 2 s (default 1 → 16 s, 5 tries).
SCHEDULE = {
    "MCP_RETRY_BASE_SECONDS": "0.25",
    "MCP_RETRY_MAX_SECONDS": "2",
    "MCP_RETRY_ATTEMPTS": "8",
    "MCP_HEALTH_CACHE_SECONDS": "0",
    "MCP_HALF_OPEN_COOLDOWN_SECONDS": "1",
    "MCP_CONNECT_TIMEOUT_SECONDS": "2",
    "MCP_CONNECT_WAIT_SECONDS": "4",
}
MAX_DELAY_S = 2.0
# One connect (initialize + list_tools) on a loaded loopback, allowed on top of the wait.
CONNECT_ALLOWANCE_S = 0.5
PAUSES_S = [0.0, 0.3, 0.8, 1.5, 2.5, 0.1, 0.5, 1.1, 2.0, 3.0]


async def _status(client: ChatClient, name: str) -> dict[str, Any]:
    body = (await client.http.get("/api/mcp/status")).json()
    for server in body["servers"]:
        if server["name"] == name:
            return dict(server)
    return {}


async def _wait_state(
    client: ChatClient, name: str, want: set[str] | None, avoid: str | None, within: float
) -> tuple[dict[str, Any], float]:
    """Poll until the state is in `want` (or differs from `avoid`); (status, when)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        status = await _status(client, name)
        state = status.get("state")
        if (want is not None and state in want) or (avoid is not None and state != avoid):
            return status, time.monotonic()
        await asyncio.sleep(0.01)
    raise RuntimeError(f"{name} did not reach {want or 'not ' + str(avoid)} in {within}s")


async def _tool_works(client: ChatClient, model: ScriptedModelServer, thread: str) -> bool:
    model.script(
        Reply(tool_calls=[ScriptedToolCall(name="search_vaults", arguments={"query": "usdc"})]),
        Reply(text=["Found them."]),
    )
    frames = await client.turn(thread, "Which USDC vaults are there?")
    results = [f for f in frames if f["type"] == "tool_result"]
    return bool(results) and all(r["ok"] for r in results)


async def run(sizes: BenchSizes) -> list[Row]:
    """Kill, pause, restart, time the way back; repeated with different pauses."""
    repeats = sizes.pick(3, 8)
    recoveries: list[float] = []
    bounds: list[float] = []
    within: list[bool] = []
    usable = 0
    with (
        ScriptedModelServer(default=Reply(text=["ok"])) as model,
        McpTestServer("vaults") as server,
        state_dir("mcp") as state,
    ):
        variables = runtime_vars(
            model.base_url, MCP_DEFAULT_SERVER_URL=server.url, MCP_DEFAULT_SERVER_NAME="vaults"
        )
        with running_runtime(state, {**variables, **SCHEDULE}) as runtime:
            async with ChatClient(runtime.url, runtime.ws_url) as client:
                await client.connect()
                thread = await client.new_thread()
                await _wait_state(client, "vaults", {"ready"}, None, 30)
                for index in range(repeats):
                    server.stop()
                    await client.turn(thread, "Anything new?")  # the health check notices
                    await _wait_state(client, "vaults", None, "ready", 10)
                    await asyncio.sleep(PAUSES_S[index % len(PAUSES_S)])
                    server.start()
                    restarted = time.monotonic()
                    at_restart = await _status(client, "vaults")
                    if at_restart.get("state") == "failed":
                        raise RuntimeError(
                            "retries exhausted before the restart; lengthen SCHEDULE"
                        )
                    wait = at_restart.get("next_retry_in_seconds")
                    bound = min(float(wait), MAX_DELAY_S) if wait is not None else MAX_DELAY_S
                    bound += CONNECT_ALLOWANCE_S
                    _, ready_at = await _wait_state(client, "vaults", {"ready"}, None, 30)
                    recovered = ready_at - restarted
                    recoveries.append(recovered * 1000)
                    bounds.append(bound * 1000)
                    within.append(recovered <= bound)
                    usable += await _tool_works(client, model, thread)
    figure, bound_spread = Spread.of(recoveries), Spread.of(bounds)
    schedule = "0.25 → 2 s × 8"
    return [
        Row(
            bench="mcp_recovery",
            metric="server restart → remote tools ready again",
            unit="ms",
            figure=figure,
            baseline=bound_spread,
            baseline_label="bound: scheduled retry + one connect",
            ratio=figure.median / bound_spread.median if bound_spread.median else None,
            target="every restart within its bound",
            met=all(within) and usable == repeats,
            note=(
                f"{sum(within)}/{repeats} within bound; remote tool call succeeded "
                f"{usable}/{repeats}; schedule {schedule}"
            ),
        )
    ]
