"""Durable Object alarms on both runtimes: the MCP recovery schedule runs on them.

A server that cannot be connected is retried on the object's alarm (`ctx.storage.setAlarm`
and the `alarm()` handler), not on a timer of a request: the object is woken for each
retry with no request open, and after the last one the server is `failed`, for the same
reason on both runtimes (nothing listens where the server should be).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.chat_client import ChatClient
from tests.support.runtime_process import RuntimeProcess

BASE_SECONDS = 0.5
ATTEMPTS = 3
# Each retry waits a random time under its ceiling (0.5 s, then 1 s capped at 1 s).
CEILINGS = (0.5, 1.0, 1.0)


@pytest.fixture(scope="module")
def runtime(
    tmp_path_factory: pytest.TempPathFactory, runtime_kind: str
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp(f"alarms-{runtime_kind}")
    variables = {
        "ALBERT_MODE": "local",
        "MCP_DEFAULT_SERVER_URL": "",
        "MCP_CONNECT_WAIT_SECONDS": "0",
        "MCP_CONNECT_TIMEOUT_SECONDS": "1",
        "MCP_RETRY_BASE_SECONDS": str(BASE_SECONDS),
        "MCP_RETRY_MAX_SECONDS": "1",
        "MCP_RETRY_ATTEMPTS": str(ATTEMPTS),
        "MCP_HALF_OPEN_COOLDOWN_SECONDS": "600",
    }
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


async def _status(client: ChatClient) -> dict[str, Any]:
    servers = (await client.http.get("/api/mcp/status")).json()["servers"]
    return dict(next(s for s in servers if s["name"] == "notes"))


async def test_retries_run_on_alarms_until_the_server_is_failed(
    runtime: RuntimeProcess, closed_port: int
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        added = await client.http.post(
            "/api/mcp/servers", json={"name": "notes", "url": f"http://127.0.0.1:{closed_port}/mcp"}
        )
        assert added.status_code == 201, added.text
        seen: list[tuple[str, int]] = []
        waits: list[tuple[int, float]] = []
        # Polling only reads the status; the retries happen between the reads, on alarms.
        for _ in range(300):
            status = await _status(client)
            if not seen or seen[-1] != (status["state"], status["attempts"]):
                seen.append((status["state"], status["attempts"]))
            if status["state"] == "reconnecting" and status["next_retry_in_seconds"] is not None:
                waits.append((status["attempts"], status["next_retry_in_seconds"]))
            if status["state"] == "failed":
                break
            await asyncio.sleep(0.1)
    assert seen[-1][0] == "failed", seen
    assert status["last_error"], status
    # Every wait shown was under the ceiling of the retry it led to.
    assert all(wait <= CEILINGS[made] for made, wait in waits), waits
    # The server's fault, not the client's: the SDK loaded and the connect was refused.
    assert status["last_error"].startswith("server unreachable"), status
    assert "reconnecting" in {state for state, _ in seen}, seen
    assert max(attempts for _, attempts in seen) >= ATTEMPTS - 1, seen
