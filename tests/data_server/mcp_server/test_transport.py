"""How the data server answers MCP requests: one JSON body per tool call, and the SDK's
`Mcp-Param-*` header check skipped only where it can find nothing to compare."""

from __future__ import annotations

from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import validate_mcp_param_headers
from pydantic import Field

from albert.mcp.connection import McpConnection
from albert.search import TypesenseClient
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import StrictInput, ToolOutput, build_tool
from data_server.mcp_server.search import SearchVaultsInput
from data_server.mcp_server.server import (
    _SPECS,
    VaultMcpServer,
    build_mcp_server,
    declares_param_headers,
)
from data_server.mcp_server.vault_index import VaultIndex, search_params
from tests.data_server.mcp_server.servers import AppServer


async def test_a_tool_call_is_answered_with_one_json_body(app_server: AppServer) -> None:
    seen: list[tuple[str, str]] = []

    async def record(response: httpx2.Response) -> None:
        await response.aread()
        seen.append((response.request.method, response.headers.get("content-type", "")))

    http = httpx2.AsyncClient(event_hooks={"response": [record]})
    async with http, Client(streamable_http_client(app_server.mcp_url, http_client=http)) as client:
        await client.list_tools()
        seen.clear()
        result = await client.call_tool("search_vaults", {"chain": "ethereum", "per_page": 3})
    assert not result.is_error and result.structured_content is not None
    assert result.content and result.content[0].type == "text"  # the readable summary stays
    assert seen == [("POST", "application/json")]


def _deps() -> ToolDeps:
    return ToolDeps(index=VaultIndex(None, "unused"))  # type: ignore[arg-type]


def test_none_of_our_tools_declares_a_param_header() -> None:
    server = build_mcp_server(_deps())
    assert isinstance(server, VaultMcpServer)
    for name, *_ in _SPECS:
        schema = server._tool_manager.get_tool(name).parameters
        assert not declares_param_headers(schema), name
        # So the SDK's own check passes every request to them, whatever its headers ...
        headers = {"mcp-param-chain": "base", "mcp-param-query": "x", "mcp-param-region": "eu"}
        for arguments in ({}, {"chain": "ethereum", "query": "usdc"}):
            assert validate_mcp_param_headers(schema, arguments, headers) is None
        # ... and the server does not hand it the schema to walk.
        assert server._tool_input_schema(name) is None
    assert server._tool_input_schema("no_such_tool") is None


class _RoutedInput(StrictInput):
    region: str = Field(json_schema_extra={"x-mcp-header": "Region"})


def test_a_tool_that_declares_a_header_still_gets_the_check() -> None:
    async def handler(params: _RoutedInput) -> ToolOutput[Any]:
        raise AssertionError("not called")

    tool = build_tool(
        "routed", "A tool routed by region.", _RoutedInput, SearchVaultsInput, handler
    )
    server = VaultMcpServer(name="routing", tools=[tool])
    schema = server._tool_input_schema("routed")
    assert schema is not None and declares_param_headers(schema)
    rejection = validate_mcp_param_headers(schema, {"region": "eu"}, {"mcp-param-region": "us"})
    assert rejection is not None


async def test_a_stray_param_header_is_ignored_as_the_sdk_would(app_server: AppServer) -> None:
    connection = McpConnection(
        "vaults",
        app_server.mcp_url,
        {"Mcp-Param-Chain": "base"},
        on_lost=lambda _: None,
        on_tools_changed=lambda: None,
    )
    await connection.connect(within=10)
    try:
        await connection.list_tools(within=10)
        result = await connection.call_tool("search_vaults", {"chain": "ethereum", "per_page": 2})
    finally:
        await connection.close()
    assert not result.is_error, result.texts
    assert result.structured is not None and result.structured["vaults"]


async def test_the_vault_search_asks_for_no_highlights_and_finds_the_same_vaults(
    app_server: AppServer,
) -> None:
    settings = app_server.settings
    key = settings.typesense_api_key.get_secret_value()
    collection = settings.vaults_collection
    async with TypesenseClient(settings.typesense_url, key) as client:
        for q, filter_by in (("usdc", ""), ("eth", "apy:>=1"), (None, "stablecoin:=true")):
            ours = search_params(q=q, filter_by=filter_by, sort_by="tvl_usd:desc", per_page=50)
            plain = ours.model_copy(update={"extra": {}})
            lean = await client.search(collection, ours)
            full = await client.search(collection, plain)
            assert lean.found == full.found and lean.found > 0
            assert [h.document for h in lean.hits] == [h.document for h in full.hits]
            assert all(
                not h.highlights and not (h.model_extra or {}).get("highlight") for h in lean.hits
            )
            if q is not None:
                assert any(h.highlights for h in full.hits)  # the text queries did match text
