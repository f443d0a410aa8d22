"""After a restart of the runtime process, many objects woken at once all connect, and a
cold process's first remote tool call succeeds however slowly the SDK loads.

The probe's case: restart the runtime, wake several clients' objects concurrently,
and every MCP server must reach `ready`, never staying `connecting` (the lazy SDK
import once handed a half-built module to all but the first object, and the
connection task died silently). The `mcp` import is made slow on purpose in the
restarted runtime (tests/support/slow_mcp_import), so the objects' first attempts
all overlap that import. The import is the process's one-off, not the server's: it
does not count against an attempt's connect timeout (inside Pyodide it takes seconds in
every cold isolate).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.chat_client import ChatClient
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

SLOW_IMPORT_DIR = Path(__file__).resolve().parents[1] / "support" / "slow_mcp_import"
CLIENTS = 12
CONNECT_TIMEOUT = 2.0
RETRY_BASE = 0.5
# No server may stay `connecting` longer than the SDK's load and one attempt's bound
# (timeout + one delay); the slack is for a loaded machine polling 12 objects over HTTP.
CONNECTING_BOUND = CONNECT_TIMEOUT + RETRY_BASE
SLACK = 5.0


@pytest.fixture(scope="module")
def vaults() -> Iterator[InProcessMcpServer]:
    with InProcessMcpServer("vaults") as server:
        yield server


def slow_import_env(seconds: float, log: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(SLOW_IMPORT_DIR), os.environ.get("PYTHONPATH")) if p)
    return {
        "PYTHONPATH": path,
        "ALBERT_TEST_SLOW_IMPORT_SECONDS": str(seconds),
        "ALBERT_TEST_IMPORT_LOG": str(log),
    }


async def statuses(clients: list[ChatClient]) -> list[dict[str, Any]]:
    answers = await asyncio.gather(*(c.http.get("/api/mcp/status") for c in clients))
    return [a.json()["servers"][0] for a in answers]


@pytest.mark.parametrize("import_seconds", [1.0, 4.0], ids=["import-1s", "import-4s"])
async def test_objects_woken_at_once_after_a_restart_all_reach_ready(
    tmp_path: Path, vaults: InProcessMcpServer, import_seconds: float
) -> None:
    variables = {
        "ALBERT_MODE": "local",
        "MCP_DEFAULT_SERVER_URL": vaults.url,
        "MCP_CONNECT_TIMEOUT_SECONDS": str(CONNECT_TIMEOUT),
        "MCP_RETRY_BASE_SECONDS": str(RETRY_BASE),
        "MCP_RETRY_MAX_SECONDS": "1",
        "MCP_RETRY_ATTEMPTS": "20",
    }
    import_log = tmp_path / "mcp-imports.log"
    runtime = RuntimeProcess(tmp_path, variables, env=slow_import_env(import_seconds, import_log))
    with runtime:
        clients = [ChatClient(runtime.url, runtime.ws_url) for _ in range(CLIENTS)]
        try:
            for client in clients:
                await client.__aenter__()
                await client.new_thread()  # the object exists, with its threads
            runtime.kill()  # a crash: the next start wakes every object afresh
            import_log.unlink(missing_ok=True)
            runtime.start()

            woken = time.monotonic()
            answers = await asyncio.gather(*(c.http.get("/api/threads") for c in clients))
            assert all(a.status_code == 200 for a in answers)
            connecting_since: dict[int, float] = {}
            for _ in range(400):
                now = time.monotonic()
                states = await statuses(clients)
                for n, status in enumerate(states):
                    if status["state"] == "connecting":
                        since = connecting_since.setdefault(n, woken)
                        bound = import_seconds + CONNECTING_BOUND + SLACK
                        assert now - since < bound, (n, status)
                if all(s["state"] == "ready" for s in states):
                    break
                assert time.monotonic() - woken < 60, states
                await asyncio.sleep(0.1)
            assert all(s["state"] == "ready" and s["tools"] > 0 for s in states), states
            # The SDK was imported once, by one thread, for all twelve objects.
            assert len(import_log.read_text().splitlines()) == 1
            log = runtime.log_path.read_text(errors="replace")
            assert "Traceback" not in log, runtime.log_tail(60)
        finally:
            for client in clients:
                await client.__aexit__()


async def test_a_cold_processs_first_turn_gets_the_remote_tools_however_slow_the_sdk_loads(
    tmp_path: Path, vaults: InProcessMcpServer
) -> None:
    # The SDK takes 3 s to load against a 1 s connect timeout and a 2 s wait of the turn:
    # counted against either, the first turn would go without the vault tools.
    with ScriptedModelServer() as model:
        variables = {
            "ALBERT_MODE": "local",
            "MODEL_BASE_URL": model.base_url,
            "MCP_DEFAULT_SERVER_URL": vaults.url,
            "MCP_DEFAULT_SERVER_NAME": "vaults",
            "MCP_CONNECT_TIMEOUT_SECONDS": "1",
            "MCP_CONNECT_WAIT_SECONDS": "2",
            "MCP_RETRY_BASE_SECONDS": str(RETRY_BASE),
        }
        env = slow_import_env(3.0, tmp_path / "mcp-imports.log")
        with RuntimeProcess(tmp_path, variables, env=env) as runtime:
            async with ChatClient(runtime.url, runtime.ws_url) as client:
                await client.connect()
                thread = await client.new_thread()
                model.script(
                    Reply(
                        tool_calls=[
                            ScriptedToolCall(name="search_vaults", arguments={"query": "usdc"})
                        ]
                    ),
                    Reply(text=["Found."]),
                )
                frames = await client.turn(thread, "usdc vaults?")
                [result] = [f for f in frames if f["type"] == "tool_result"]
                assert result["ok"] and result["server"] == "vaults", result["content"]
                status = (await client.http.get("/api/mcp/status")).json()["servers"][0]
                assert status["state"] == "ready" and status["attempts"] == 0, status
