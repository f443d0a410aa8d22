"""After a restart of the runtime process, many objects woken at once all connect.

The probe's case: restart the runtime, wake several clients' objects concurrently,
and every MCP server must reach `ready`, never staying `connecting` (the lazy SDK
import once handed a half-built module to all but the first object, and the
connection task died silently). The `mcp` import is made slow on purpose in the
restarted runtime (tests/support/slow_mcp_import), so the objects' first attempts
all overlap that import.
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

SLOW_IMPORT_DIR = Path(__file__).resolve().parents[1] / "support" / "slow_mcp_import"
CLIENTS = 12
CONNECT_TIMEOUT = 2.0
RETRY_BASE = 0.5
# No server may stay `connecting` longer than one attempt's bound (timeout + one delay);
# the slack is for a loaded machine polling 12 objects over HTTP.
CONNECTING_BOUND = CONNECT_TIMEOUT + RETRY_BASE
SLACK = 3.0


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
                        assert now - since < CONNECTING_BOUND + SLACK, (n, status)
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
