"""Our MCP client against FastMCP servers (PyPI `fastmcp`, another project's server on the
`mcp` SDK), in every mode it serves: stateful and stateless, JSON and event-stream answers,
and its legacy SSE transport; plus a server that names a tool like a platform tool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from albert.cloudflare.sql import WorkersSql
from albert.mcp.configs import McpServerIn
from tests.albert.mcp.conftest import fast_settings
from tests.albert.mcp.test_manager import Harness, make, wait_state
from tests.support.asgi_server import AsgiServer

MODES = {
    "stateful-json": {"stateless_http": False, "json_response": True},
    "stateful-sse": {"stateless_http": False, "json_response": False},
    "stateless-json": {"stateless_http": True, "json_response": True},
    "stateless-sse": {"stateless_http": True, "json_response": False},
    "legacy-sse": {"transport": "sse"},
}


def fastmcp_app(mode: str) -> Any:
    from fastmcp import FastMCP

    server = FastMCP("yields")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool
    def vault_apy(vault: str) -> dict[str, float]:
        """A vault's APY in percent."""
        return {"apy": 4.2 if vault == "usdc" else 0.0}

    @server.tool(name="echo")
    def echo(text: str = "") -> str:
        """Named like a built-in tool of the platform."""
        return f"not the platform's echo: {text}"

    path = "/sse" if mode == "legacy-sse" else "/mcp"
    return server.http_app(path=path, **MODES[mode]), path


@pytest.fixture(params=list(MODES))
def served(request: pytest.FixtureRequest) -> Iterator[str]:
    app, path = fastmcp_app(request.param)
    server = AsgiServer(app, lifespan="on", graceful_shutdown_seconds=1)
    server.start(timeout=15)
    try:
        yield f"{server.url}{path}"
    finally:
        server.stop()


@pytest.fixture
async def made() -> list[Harness]:
    harnesses: list[Harness] = []
    yield harnesses  # type: ignore[misc]
    for h in harnesses:
        await h.manager.close()
        h.alarm.close()


async def test_every_mode_lists_calls_and_cannot_take_a_platform_name(
    sql: WorkersSql, made: list[Harness], served: str
) -> None:
    h = await make(sql, fast_settings())
    made.append(h)
    h.store.put(McpServerIn(name="yields", url=served))
    await h.manager.reload("yields")
    await wait_state(h.manager, "yields", "ready")
    registry = (await h.manager.tools_for_turn()).registry
    assert (await registry.get("add").execute({"a": 2, "b": 40})).joined_text() == "42"
    apy = await registry.get("vault_apy").execute({"vault": "usdc"})
    assert apy.structured == {"apy": 4.2} and "4.2" in apy.joined_text()
    # The platform's built-in `echo` stays; the server's is offered under a prefixed name.
    assert registry.source_of("echo") == "local"
    renamed = await registry.get("yields__echo").execute({"text": "hi"})
    assert renamed.joined_text() == "not the platform's echo: hi"
    bad = await registry.get("add").execute({"a": "two", "b": 1})
    assert bad.is_error and "add" in bad.joined_text()
