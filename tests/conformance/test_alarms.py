"""Durable Object alarms on both runtimes: the MCP retry schedule runs on them.

A server that cannot be connected is retried on the object's alarm (`ctx.storage.setAlarm`
and the `alarm()` handler), not on a timer of a request: the object is woken for each
retry with no request open, and after the last one the server is `failed`, for the same
reason on both runtimes (nothing listens where the server should be).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.chat_client import ChatClient
from tests.support.runtime_process import RuntimeProcess

BASE_SECONDS = 0.5
ATTEMPTS = 3
# The waits before retries 2 and 3 (1 s, then capped at 1 s): the least the cycle takes.
LEAST_SECONDS = 2 * 1.0


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
    runtime: RuntimeProcess, runtime_kind: str, closed_port: int
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        added = await client.http.post(
            "/api/mcp/servers", json={"name": "notes", "url": f"http://127.0.0.1:{closed_port}/mcp"}
        )
        assert added.status_code == 201, added.text
        started = time.monotonic()
        seen: list[tuple[str, int]] = []
        # Polling only reads the status; the retries happen between the reads, on alarms.
        for _ in range(300):
            status = await _status(client)
            if not seen or seen[-1] != (status["state"], status["attempts"]):
                seen.append((status["state"], status["attempts"]))
            if status["state"] == "failed":
                break
            await asyncio.sleep(0.1)
        took = time.monotonic() - started
    assert seen[-1][0] == "failed", seen
    assert status["last_error"], status
    assert status["last_error"] == "server unreachable", status
    assert "reconnecting" in {state for state, _ in seen}, seen
    assert max(attempts for _, attempts in seen) >= ATTEMPTS - 1, seen
    assert took >= LEAST_SECONDS, (took, seen)
