"""Fixtures for the MCP client layer: real SQLite, real MCP test servers on loopback."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from albert.cloudflare.sql import WorkersSql
from albert.settings import Settings
from miniflare.storage import SqlStorage
from tests.support.mcp_test_server import InProcessMcpServer, McpTestServer

if TYPE_CHECKING:
    from tests.albert.mcp.test_manager import Harness

# Fast schedule: the whole recovery cycle takes well under a second.
FAST = {
    "ALBERT_MODE": "local",
    "MCP_RETRY_BASE_SECONDS": "0.05",
    "MCP_RETRY_MAX_SECONDS": "0.2",
    "MCP_RETRY_ATTEMPTS": "5",
    "MCP_HEALTH_CACHE_SECONDS": "0",
    "MCP_HALF_OPEN_COOLDOWN_SECONDS": "0.3",
    "MCP_CONNECT_TIMEOUT_SECONDS": "3",
    "MCP_CONNECT_WAIT_SECONDS": "5",
    "TOOL_TIMEOUT_SECONDS": "5",
}


def fast_settings(**overrides: str) -> Settings:
    """Local-mode settings with the shortened schedule."""
    return Settings.from_env({**FAST, **overrides})


@pytest.fixture
def sql(tmp_path: Path) -> Iterator[WorkersSql]:
    storage = SqlStorage(tmp_path / "object.sqlite")
    yield WorkersSql(storage)
    storage.close()


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture(scope="module")
def vaults() -> Iterator[InProcessMcpServer]:
    """A vault server shared by a module's tests; tests that kill a server start their own."""
    with InProcessMcpServer("vaults") as server:
        yield server


@pytest.fixture
def killable_vaults() -> Iterator[McpTestServer]:
    """A vault server of this test alone, to kill and restart."""
    with McpTestServer("vaults") as server:
        yield server


@pytest.fixture
async def harness_factory() -> AsyncIterator[list[Harness]]:
    """Managers a test makes (tests.albert.mcp.test_manager.harness), closed after it."""
    made: list[Harness] = []
    yield made
    for h in made:
        await h.manager.close()
        h.alarm.close()
